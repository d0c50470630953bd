SELECT name FROM customers
SELECT * FROM products
SELECT DISTINCT country FROM customers
SELECT name, price FROM products WHERE price > 50 ORDER BY price DESC
SELECT COUNT(*) FROM orders
SELECT COUNT(*) AS n FROM orders WHERE status = 'delivered'
SELECT country, COUNT(*) AS n FROM customers GROUP BY country ORDER BY n DESC
SELECT category, AVG(price) AS avg_price FROM products GROUP BY category HAVING AVG(price) > 30
SELECT name FROM products WHERE name LIKE '%Board%'
SELECT id, order_date FROM orders WHERE order_date BETWEEN '2025-01-01' AND '2025-03-31'
SELECT name, city FROM customers WHERE country IN ('Germany', 'France', 'Spain')
SELECT name FROM customers WHERE country NOT IN ('Japan', 'India')
SELECT COUNT(DISTINCT customer_id) AS buyers FROM orders
SELECT MIN(price) AS cheapest, MAX(price) AS dearest FROM products
SELECT name, ROUND(price * 1.2, 2) AS gross FROM products ORDER BY gross DESC LIMIT 5
SELECT strftime('%Y', order_date) AS yr, COUNT(*) AS n FROM orders GROUP BY strftime('%Y', order_date) ORDER BY yr
SELECT c.name, o.order_date FROM customers AS c JOIN orders AS o ON o.customer_id = c.id WHERE o.status = 'pending'
SELECT c.name, COUNT(o.id) AS orders_count FROM customers AS c LEFT JOIN orders AS o ON o.customer_id = c.id GROUP BY c.id, c.name ORDER BY orders_count DESC LIMIT 10
SELECT p.name, SUM(oi.quantity) AS units FROM products AS p JOIN order_items AS oi ON oi.product_id = p.id GROUP BY p.id ORDER BY units DESC LIMIT 5
SELECT c.country, SUM(oi.quantity * p.price) AS revenue FROM customers AS c JOIN orders AS o ON o.customer_id = c.id JOIN order_items AS oi ON oi.order_id = o.id JOIN products AS p ON p.id = oi.product_id WHERE o.status <> 'cancelled' GROUP BY c.country ORDER BY revenue DESC
SELECT name FROM customers WHERE id NOT IN (SELECT customer_id FROM orders)
SELECT name FROM products WHERE price > (SELECT AVG(price) FROM products)
SELECT c.name FROM customers AS c WHERE EXISTS (SELECT 1 FROM orders AS o WHERE o.customer_id = c.id AND o.status = 'cancelled')
SELECT name FROM customers AS c WHERE NOT EXISTS (SELECT 1 FROM orders WHERE customer_id = c.id)
SELECT sub.country, sub.n FROM (SELECT country, COUNT(*) AS n FROM customers GROUP BY country) AS sub WHERE sub.n > 8 ORDER BY sub.n DESC
SELECT name, (SELECT COUNT(*) FROM orders WHERE customer_id = customers.id) AS n_orders FROM customers ORDER BY n_orders DESC LIMIT 5
SELECT name, CASE WHEN price < 20 THEN 'cheap' WHEN price < 60 THEN 'mid' ELSE 'premium' END AS band FROM products
SELECT status, CASE status WHEN 'delivered' THEN 1 ELSE 0 END AS done FROM orders LIMIT 10
SELECT name FROM customers WHERE signup_date IS NULL
SELECT c.name, o.id FROM customers AS c LEFT JOIN orders AS o ON o.customer_id = c.id WHERE o.id IS NULL
SELECT UPPER(name) AS upper_name FROM customers ORDER BY upper_name LIMIT 3
SELECT name, LENGTH(name) AS len FROM products ORDER BY len DESC, name ASC LIMIT 5
SELECT city || ', ' || country AS place FROM customers LIMIT 10
SELECT name FROM products ORDER BY price DESC LIMIT 5 OFFSET 5
SELECT o.id, SUM(oi.quantity * p.price) AS total FROM orders AS o JOIN order_items AS oi ON oi.order_id = o.id JOIN products AS p ON p.id = oi.product_id GROUP BY o.id HAVING SUM(oi.quantity * p.price) > 500 ORDER BY total DESC
SELECT category, COUNT(*) AS n FROM products GROUP BY category HAVING COUNT(*) >= 8
SELECT AVG(julianday(o.order_date) - julianday(c.signup_date)) AS days FROM orders AS o JOIN customers AS c ON c.id = o.customer_id
SELECT strftime('%m', order_date) AS mon, COUNT(*) AS n FROM orders WHERE strftime('%Y', order_date) = '2025' GROUP BY strftime('%m', order_date) ORDER BY mon
SELECT CAST(price AS INTEGER) AS whole FROM products LIMIT 5
SELECT COALESCE(SUM(quantity), 0) AS units FROM order_items WHERE product_id = 3
SELECT p.category, COUNT(DISTINCT o.customer_id) AS buyers FROM products AS p JOIN order_items AS oi ON oi.product_id = p.id JOIN orders AS o ON o.id = oi.order_id GROUP BY p.category
SELECT c.name, c2.name FROM customers AS c JOIN customers AS c2 ON c2.city = c.city AND c2.id > c.id LIMIT 10
SELECT p.name, p2.name FROM products AS p INNER JOIN products AS p2 ON p2.category = p.category AND p2.price > p.price * 2 LIMIT 10
SELECT name FROM products WHERE id IN (SELECT product_id FROM order_items GROUP BY product_id HAVING SUM(quantity) > 30)
SELECT MAX(sub.n) AS most FROM (SELECT customer_id, COUNT(*) AS n FROM orders GROUP BY customer_id) AS sub
SELECT country FROM customers GROUP BY country HAVING COUNT(*) = (SELECT MAX(sub.cnt) FROM (SELECT COUNT(*) AS cnt FROM customers GROUP BY country) AS sub)
SELECT id FROM orders WHERE status = 'shipped' AND order_date >= '2026-01-01' OR status = 'pending' AND order_date < '2024-06-01'
SELECT id FROM orders WHERE (status = 'shipped' OR status = 'pending') AND NOT customer_id = 5
SELECT name, price FROM products WHERE price BETWEEN 10 AND 20 AND category <> 'toys'
SELECT name FROM products WHERE price NOT BETWEEN 10 AND 100
SELECT name FROM customers WHERE name NOT LIKE 'A%'
SELECT SUBSTR(signup_date, 1, 4) AS yr, COUNT(*) AS n FROM customers GROUP BY SUBSTR(signup_date, 1, 4)
SELECT TOTAL(quantity) AS units FROM order_items
SELECT GROUP_CONCAT(DISTINCT category) AS cats FROM products
SELECT country, GROUP_CONCAT(name, '; ') AS names FROM customers GROUP BY country
SELECT id, price * 100 % 7 AS r FROM products LIMIT 3
SELECT -price AS neg FROM products LIMIT 2
SELECT name FROM products WHERE price = (SELECT MAX(price) FROM products WHERE category = 'books')
SELECT p.name FROM products AS p WHERE p.price > (SELECT AVG(p2.price) FROM products AS p2 WHERE p2.category = p.category)
SELECT name FROM products AS p WHERE price > (SELECT AVG(price) FROM products WHERE category = p.category)
SELECT o.id, c.name, o.status FROM orders AS o JOIN customers AS c ON c.id = o.customer_id ORDER BY o.order_date DESC LIMIT 10
SELECT DISTINCT c.country FROM customers AS c JOIN orders AS o ON o.customer_id = c.id WHERE o.status = 'cancelled'
SELECT c.name, SUM(oi.quantity) AS units FROM customers AS c JOIN orders AS o ON o.customer_id = c.id JOIN order_items AS oi ON oi.order_id = o.id GROUP BY c.id ORDER BY units DESC LIMIT 3
SELECT o.status, COUNT(*) AS n FROM orders AS o GROUP BY o.status
SELECT customers.name FROM customers JOIN orders ON orders.customer_id = customers.id WHERE orders.order_date LIKE '2026-%'
SELECT sub.category, sub.avg_price FROM (SELECT category, AVG(price) AS avg_price FROM products GROUP BY category) AS sub ORDER BY sub.avg_price DESC LIMIT 1
SELECT c.name, sub.n FROM customers AS c JOIN (SELECT customer_id, COUNT(*) AS n FROM orders GROUP BY customer_id) AS sub ON sub.customer_id = c.id WHERE sub.n >= 8
SELECT IIF(price > 50, 'high', 'low') AS level, COUNT(*) AS n FROM products GROUP BY IIF(price > 50, 'high', 'low')
SELECT IFNULL(MAX(order_date), 'none') AS last_order FROM orders WHERE customer_id = 7
SELECT name FROM customers WHERE LOWER(city) = 'lyon'
SELECT name FROM customers WHERE INSTR(name, ' ') > 0 LIMIT 5
SELECT REPLACE(name, ' ', '_') AS slug FROM products LIMIT 5
SELECT TRIM(name) AS name2 FROM customers LIMIT 3
SELECT ABS(julianday('2026-01-01') - julianday(signup_date)) AS days FROM customers LIMIT 5
SELECT date(order_date, '+30 days') AS due FROM orders LIMIT 5
SELECT COUNT(*) AS n FROM orders WHERE order_date > date('2026-11-30', '-90 days')
SELECT datetime(signup_date) AS ts FROM customers LIMIT 1
SELECT NULLIF(status, 'pending') AS st FROM orders LIMIT 5
SELECT o.id FROM orders AS o WHERE o.id IN (SELECT oi.order_id FROM order_items AS oi JOIN products AS p ON p.id = oi.product_id WHERE p.category = 'toys')
SELECT c.name FROM customers AS c WHERE (SELECT COUNT(*) FROM orders AS o WHERE o.customer_id = c.id) > 6
SELECT c.country, AVG(sub.total) AS avg_order FROM customers AS c JOIN (SELECT o.customer_id, SUM(oi.quantity * p.price) AS total FROM orders AS o JOIN order_items AS oi ON oi.order_id = o.id JOIN products AS p ON p.id = oi.product_id GROUP BY o.id) AS sub ON sub.customer_id = c.id GROUP BY c.country ORDER BY avg_order DESC
SELECT p.category, ROUND(AVG(oi.quantity), 2) AS avg_qty FROM order_items AS oi JOIN products AS p ON p.id = oi.product_id GROUP BY p.category ORDER BY avg_qty DESC
SELECT status, COUNT(*) * 100.0 / (SELECT COUNT(*) FROM orders) AS pct FROM orders GROUP BY status
SELECT c.name FROM customers AS c WHERE c.id IN (SELECT o.customer_id FROM orders AS o WHERE o.status = 'delivered') AND c.country = 'Kenya'
SELECT name FROM products WHERE category = 'kitchen' ORDER BY price LIMIT 3
SELECT c.city, COUNT(DISTINCT o.id) AS n FROM customers AS c LEFT JOIN orders AS o ON o.customer_id = c.id AND o.status = 'shipped' GROUP BY c.city HAVING COUNT(DISTINCT o.id) > 0 ORDER BY n DESC, c.city
SELECT o.*, c.name FROM orders AS o JOIN customers AS c ON c.id = o.customer_id LIMIT 3
SELECT p.* FROM products AS p WHERE p.price < 15
SELECT COUNT(*) AS n FROM order_items WHERE quantity > 3
SELECT order_id, SUM(quantity) AS units FROM order_items GROUP BY order_id ORDER BY units DESC LIMIT 5
SELECT strftime('%Y-%m', o.order_date) AS ym, COUNT(DISTINCT o.customer_id) AS buyers FROM orders AS o GROUP BY strftime('%Y-%m', o.order_date) ORDER BY ym DESC LIMIT 6
SELECT c.name, MAX(o.order_date) AS last_seen FROM customers AS c JOIN orders AS o ON o.customer_id = c.id GROUP BY c.id ORDER BY last_seen LIMIT 5
SELECT name FROM customers WHERE country = 'Canada' AND (city = 'Toronto' OR city = 'Vancouver')
SELECT name, price FROM products WHERE price * 2 + 1 > 100 - 10 / 2
SELECT name FROM products WHERE NOT (price > 20 AND price < 80)
SELECT c.name, COUNT(*) AS n FROM customers AS c JOIN orders AS o ON o.customer_id = c.id WHERE o.order_date BETWEEN '2025-01-01' AND '2025-12-31' GROUP BY c.id HAVING COUNT(*) > 2 ORDER BY n DESC
SELECT AVG(sub.units) AS avg_units FROM (SELECT order_id, SUM(quantity) AS units FROM order_items GROUP BY order_id) AS sub
SELECT sub2.country, sub2.revenue FROM (SELECT c.country, SUM(oi.quantity * p.price) AS revenue FROM customers AS c JOIN orders AS o ON o.customer_id = c.id JOIN order_items AS oi ON oi.order_id = o.id JOIN products AS p ON p.id = oi.product_id GROUP BY c.country) AS sub2 WHERE sub2.revenue > (SELECT AVG(sub.revenue) FROM (SELECT c.country, SUM(oi.quantity * p.price) AS revenue FROM customers AS c JOIN orders AS o ON o.customer_id = c.id JOIN order_items AS oi ON oi.order_id = o.id JOIN products AS p ON p.id = oi.product_id GROUP BY c.country) AS sub)
SELECT name, signup_date FROM customers WHERE signup_date >= '2025-06-01' ORDER BY signup_date
SELECT COUNT(*) AS n FROM customers WHERE strftime('%Y', signup_date) = '2024'
SELECT p.name FROM products AS p LEFT JOIN order_items AS oi ON oi.product_id = p.id WHERE oi.order_id IS NULL
SELECT o.status, ROUND(AVG(julianday('2026-11-30') - julianday(o.order_date)), 1) AS age FROM orders AS o GROUP BY o.status
SELECT name FROM customers WHERE id = 1
SELECT name FROM customers WHERE city = 'Lyon' OR city = 'Paris'
SELECT c.name, o.id FROM customers AS c JOIN orders AS o ON o.customer_id = c.id WHERE o.id = (SELECT MAX(id) FROM orders)
SELECT category, SUM(CASE WHEN price > 40 THEN 1 ELSE 0 END) AS expensive FROM products GROUP BY category
SELECT country, COUNT(*) AS n FROM customers WHERE name LIKE '%a%' GROUP BY country HAVING COUNT(*) > 1 ORDER BY n DESC LIMIT 3 OFFSET 1
SELECT name FROM products WHERE price IS NOT NULL AND category IN (SELECT category FROM products GROUP BY category HAVING MIN(price) < 10)
SELECT c.name, oi.quantity FROM customers AS c JOIN orders AS o ON o.customer_id = c.id JOIN order_items AS oi ON oi.order_id = o.id WHERE oi.quantity = (SELECT MAX(quantity) FROM order_items)
SELECT name, price, price - (SELECT MIN(price) FROM products) AS above_min FROM products ORDER BY above_min LIMIT 5
SELECT id FROM orders WHERE customer_id <= 3 AND status != 'cancelled'
SELECT name FROM customers WHERE country = 'Brazil' ORDER BY signup_date DESC LIMIT 1
SELECT c.name, COUNT(DISTINCT p.category) AS kinds FROM customers AS c JOIN orders AS o ON o.customer_id = c.id JOIN order_items AS oi ON oi.order_id = o.id JOIN products AS p ON p.id = oi.product_id GROUP BY c.id HAVING COUNT(DISTINCT p.category) = 5
SELECT o.id, o.order_date FROM orders AS o JOIN orders AS o2 ON o2.customer_id = o.customer_id AND o2.order_date = o.order_date AND o2.id <> o.id
SELECT name, price FROM products WHERE price > 2 * (SELECT AVG(price) FROM products) ORDER BY price DESC
SELECT c.country, ROUND(100.0 * SUM(CASE WHEN o.status = 'cancelled' THEN 1 ELSE 0 END) / COUNT(*), 1) AS cancel_rate FROM customers AS c JOIN orders AS o ON o.customer_id = c.id GROUP BY c.country ORDER BY cancel_rate DESC
SELECT name, price * 2 + -1 || ' EUR' AS label FROM products WHERE NOT price < 5 AND id % 2 = 0 OR id = 1 LIMIT 5
SELECT COALESCE(NULL, city, country) AS place, IIF(id > 3, 'late', 'early') AS era FROM customers LIMIT 4
