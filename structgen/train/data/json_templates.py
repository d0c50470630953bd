"""The JSON extraction train templates (registered on ``json_extract.REG``): 26 domains.

Each function fills a :class:`~structgen.train.data.json_extract.Fields` (keys, schema, value, text
slots) and returns its phrasings in the :func:`~structgen.train.data.base.say` pattern language.
"""

from __future__ import annotations

from . import vocab as V
from .json_extract import (
    BOOL,
    EMAIL,
    ENUM,
    INT,
    NUM,
    STR,
    STRS,
    TIME,
    Fields,
    _a,
    _date,
    _money,
    _template,
)

# ------------------------------------------------------------------------------------------------ train


@_template("person_intro")
def _(rng, f):
    name = f.add("name", ("name", "full_name", "person_name"), STR, V.person(rng))
    f.add("age", ("age", "age_years"), INT(0, 130), rng.randint(18, 90))
    f.add("city", ("city", "home_city", "lives_in"), STR, V.city(rng).name, p=0.7)
    job = rng.choice(V.JOB_TITLES)
    f.add("job", ("occupation", "job", "profession"), STR, job, _a(job), p=0.4)
    f.add("email", ("email", "email_address"), EMAIL, V.email(rng, name), p=0.4)
    return [("{name} is {age}[ years old|]<city:[ and lives in| and is based in|, living in] {city}>"
             "<job:[, working as| and works as|,] {job}>.<email: [Email|Contact|Reach them at]: {email}.>"),
            "{name}, {age},<job: {job},><city: from {city}>.<email: [{email}|email {email}].>",
            "[Meet|This is] {name}<city: from {city}>: {age} years old<job:, {job}><email:, {email}>."]


@_template("person_bio")
def _(rng, f):
    f.add("name", ("full_name", "name"), STR, V.person(rng))
    f.add("year", ("birth_year", "year_of_birth", "born"), INT(1900, 2025), rng.randint(1940, 2006))
    f.add("place", ("birthplace", "place_of_birth"), STR, V.city(rng).name)
    job = rng.choice(V.JOB_TITLES)
    f.add("job", ("job_title", "occupation"), STR, job, _a(job))
    married = f.add("married", ("married", "is_married"), BOOL, rng.random() < 0.5, p=0.5)
    f.slots["wed"] = None if married is None else ("is married" if married else "is single")
    return ["Born in {year} in {place}, {name} works as {job}<wed: and {wed}>.",
            ("{name} [was born|came into the world] in {place} in {year}. [Today|Now] [she works|he works|they work] "
             "as {job}<wed:; [she|he] {wed}>."),
            "{name} ({year}, {place}) is {job}<wed: and {wed}>."]


@_template("contact_card")
def _(rng, f):
    name = f.add("name", ("name", "contact_name", "full_name"), STR, V.person(rng))
    f.add("email", ("email", "email_address", "mail"), EMAIL, V.email(rng, name))
    phone = f"+{rng.randint(1, 99)} {rng.randint(10, 999)} {rng.randint(100, 999)} {rng.randint(1000, 9999)}"
    f.add("phone", ("phone", "phone_number", "mobile"), STR, phone, p=0.7)
    f.add("company", ("company", "organization", "employer"), STR, rng.choice(V.COMPANIES), p=0.5)
    return ["Contact: {name}, {email}<phone:, [phone|tel.|mobile] {phone}><company: ({company})>.",
            "{name}<company: from {company}> can be reached at {email}<phone: or [on|at] {phone}>.",
            "[Add|Save] {name} to my contacts: {email}<phone:, {phone}><company:, works at {company}>."]


@_template("product_listing")
def _(rng, f):
    model, kind = rng.choice(V.PRODUCTS)
    f.add("product", ("product_name", "product", "name", "title"), STR, f"{model} {kind}")
    _, code = _money(rng, f)
    f.add("currency", ("currency", "currency_code"), ENUM("EUR", "USD", "GBP", "CHF", "SEK"), code)
    stock = f.add("stock", ("in_stock", "available"), BOOL, rng.random() < 0.7)
    f.slots["stock"] = "in stock" if stock else rng.choice(("out of stock", "sold out", "not available"))
    f.add("color", ("color", "colour"), STR, rng.choice(V.COLORS), p=0.5)
    return ["The {product}<color: in {color}> [costs|is|sells for] {price} and is {stock}.",
            "{product} - {price} - {stock}<color: - {color}>",
            "[Listing|For sale|New]: {product}<color: ({color})>, {price}, currently {stock}."]


@_template("product_review")
def _(rng, f):
    model, kind = rng.choice(V.PRODUCTS)
    f.add("product", ("product", "product_name", "item"), STR, f"{model} {kind}")
    f.add("rating", ("rating", "stars", "score"), INT(1, 5), rng.randint(1, 5))
    rec = f.add("rec", ("recommend", "would_recommend", "recommended"), BOOL, rng.random() < 0.6)
    f.slots["rec"] = rng.choice(("I'd recommend it", "would buy again")) if rec else rng.choice(
        ("I would not recommend it", "not worth it"))
    pros = rng.sample(("battery life", "price", "design", "sound", "build quality", "weight", "comfort"), 2)
    f.add("pros", ("pros", "liked", "positives"), STRS, pros, V.join_list(rng, pros), p=0.5)
    return ["I gave the {product} {rating} out of 5 [stars|]. {rec}.<pros: [Loved|I liked|Good:] the {pros}.>",
            "Review of {product}: {rating}/5<pros: - great {pros}> - {rec}.",
            "{rating} stars for the {product}<pros: (pros: {pros})>; {rec}."]


@_template("order_confirmation")
def _(rng, f):
    oid = f"{rng.choice(('', 'A-', 'ORD-'))}{rng.randint(1000, 99999)}"
    f.add("order", ("order_id", "order_number", "id"), STR, oid, ("#" if rng.random() < 0.4 else "") + oid)
    f.add("customer", ("customer", "customer_name", "buyer"), STR, V.person(rng))
    _date(rng, f, "date", ("order_date", "date", "placed_on"))
    n = rng.randint(1, 12)
    f.add("count", ("item_count", "items", "quantity"), INT(1, 100), n, V.count_text(rng, n))
    _money(rng, f, ("total", "total_amount", "amount"), lo=10)
    f.add("ship", ("shipping", "shipping_method", "delivery"), ENUM("standard", "express", "overnight"),
          rng.choice(("standard", "express", "overnight")), p=0.6)
    return ["Order {order} placed by {customer} on {date}: {count} item[s|(s)], total {price}<ship:, {ship} shipping>.",
            "{customer} ordered {count} item[s|(s)] on {date} (order {order}) for {price}<ship:; shipping: {ship}>.",
            "Thanks, {customer}! Your order {order} from {date} - {count} items, {price}<ship:, sent by {ship} delivery> - is confirmed."]


@_template("order_items")
def _(rng, f):
    f.add("customer", ("customer", "customer_name", "name"), STR, V.person(rng))
    item = Fields(rng, f.style)
    kname, kqty = item.key(("name", "product", "item")), item.key(("quantity", "qty", "count"))
    goods = rng.sample(("lamp", "rug", "candle", "mug", "notebook", "chair", "vase", "towel", "pillow"), rng.randint(1, 4))
    lines = [{kname: g, kqty: rng.randint(1, 6)} for g in goods]
    schema = {"type": "array", "items": {"type": "object", "properties": {kname: STR, kqty: INT(1, 99)},
                                         "required": [kname, kqty]}}
    said = [f"{V.count_text(rng, ln[kqty])} {ln[kname]}" + ("s" if ln[kqty] > 1 else "") for ln in lines]
    f.add("items", ("items", "line_items", "products"), schema, lines, V.join_list(rng, said))
    return ["{customer} ordered {items}.", "[Order for|Basket of] {customer}: {items}.",
            "{customer} [wants|would like|bought] {items}."]


@_template("address")
def _(rng, f):
    c = V.city(rng)
    f.add("street", ("street", "street_address", "address_line"), STR, f"{rng.randint(1, 220)} {rng.choice(V.STREETS)}")
    f.add("zip", ("postal_code", "zip", "postcode", "zip_code"), STR, f"{rng.randint(1000, 99999)}", p=0.7)
    f.add("city", ("city", "town"), STR, c.name)
    f.add("country", ("country",), STR, c.country, p=0.8)
    return ["[Ship to|Deliver to|Address:] {street}, <zip:{zip} >{city}<country:, {country}>.",
            "[My address is|I live at] {street} in <zip:{zip} >{city}<country: ({country})>.",
            "{street}\n<zip:{zip} >{city}<country:\n{country}>"]


@_template("person_address")
def _(rng, f):
    f.add("name", ("name", "recipient", "full_name"), STR, V.person(rng))
    c = V.city(rng)
    sub = Fields(rng, f.style)
    sub.add("street", ("street", "line1"), STR, f"{rng.choice(V.STREETS)} {rng.randint(1, 99)}")
    sub.add("city", ("city",), STR, c.name)
    sub.add("country", ("country", "country_name"), STR, c.country, p=0.6)
    f.add("address", ("address", "home_address", "shipping_address"), sub)
    f.slots.update(sub.slots)
    f.add("phone", ("phone", "phone_number"), STR, f"0{rng.randint(100000000, 999999999)}", p=0.3)
    return ["{name} lives at {street}, {city}<country:, {country}><phone:; phone {phone}>.",
            "Send it to {name}, {street}, {city}<country: ({country})><phone:, tel {phone}>."]


@_template("event")
def _(rng, f):
    c = V.city(rng)
    name = f"{rng.choice(('Spring', 'Summer', 'Autumn', 'Winter', 'Midnight'))} {rng.choice(('Jazz Night', 'Book Fair', 'Film Festival', 'Tech Meetup', 'Food Market'))}"
    f.add("event", ("event_name", "event", "title", "name"), STR, name)
    _date(rng, f, "date", ("date", "event_date", "starts_on"))
    venue = rng.choice(("Blue Hall", "Old Harbour", "City Arena", "Kulturhaus", "Café Central"))
    f.add("venue", ("venue", "location"), STR, venue, "the " + venue)
    f.add("city", ("city",), STR, c.name)
    _money(rng, f, ("ticket_price", "price", "entry_fee"), p=0.6, lo=5, hi=120)
    so = f.add("sold", ("sold_out", "is_sold_out"), BOOL, rng.random() < 0.3, p=0.4)
    f.slots["sold"] = None if so is None else ("It is sold out." if so else "Tickets are still available.")
    return ["The {event} takes place on {date} at {venue} in {city}<price:; tickets cost {price}>. <sold:{sold}>",
            "{event}: {date}, {venue}, {city}<price: - entry {price}>.<sold: {sold}>",
            "Join us in {city} for the {event} at {venue} on {date}!<price: Tickets: {price}.><sold: {sold}>"]


@_template("meeting_note")
def _(rng, f):
    f.add("topic", ("topic", "title", "subject"), STR, rng.choice(V.TOPICS))
    _date(rng, f, "date", ("date", "meeting_date"))
    people = rng.sample(V.FIRST_NAMES, rng.randint(2, 4))
    f.add("who", ("participants", "attendees"), STRS, people, V.join_list(rng, people))
    d = rng.choice((15, 30, 45, 60, 90))
    f.add("dur", ("duration_minutes", "minutes", "length_min"), INT(5, 480), d, p=0.5)
    return ["[Meeting|Team sync|Call] on {date} with {who} about {topic}<dur: ({dur} minutes)>.",
            "Notes - {date}: {who} [discussed|talked about] {topic}<dur: for {dur} minutes>.",
            "{who} met on {date}<dur: for {dur} min> to go over {topic}."]


@_template("hotel_booking")
def _(rng, f):
    f.add("hotel", ("hotel", "hotel_name", "property"), STR, f"Hotel {rng.choice(('Sol', 'Astoria', 'Nordlys', 'Bellevue', 'Sakura', 'Königshof'))}")
    f.add("city", ("city", "destination"), STR, V.city(rng).name)
    _date(rng, f, "in", ("check_in", "arrival_date", "from_date"))
    n = rng.randint(1, 14)
    f.add("nights", ("nights", "num_nights", "stay_nights"), INT(1, 30), n, V.count_text(rng, n))
    g = rng.randint(1, 6)
    f.add("guests", ("guests", "adults", "num_guests"), INT(1, 10), g, V.count_text(rng, g))
    bf = f.add("bf", ("breakfast", "breakfast_included"), BOOL, rng.random() < 0.5, p=0.6)
    f.slots["bf"] = None if bf is None else ("breakfast included" if bf else "no breakfast")
    return ["Booked {nights} night[s|(s)] at {hotel} in {city} from {in} for {guests} [guests|people|adults]<bf:, {bf}>.",
            "{hotel}, {city}: check-in {in}, {nights} nights, {guests} guests<bf: ({bf})>.",
            "Reservation confirmed - {guests} [guests|adults] at {hotel} ({city}), arriving {in} for {nights} nights<bf:; {bf}>."]


@_template("flight_record")
def _(rng, f):
    a, b = V.two_cities(rng)
    f.add("pax", ("passenger", "passenger_name", "traveler"), STR, V.person(rng))
    f.add("flight", ("flight_number", "flight"), STR, f"{rng.choice(('LH', 'AF', 'BA', 'KL', 'SK', 'TP', 'JL'))} {rng.randint(10, 9999)}")
    f.add("from", ("origin", "from_city", "departure_city"), STR, a.name)
    f.add("to", ("destination", "to_city", "arrival_city"), STR, b.name)
    _date(rng, f, "date", ("date", "departure_date"))
    f.add("seat", ("seat",), STR, f"{rng.randint(1, 40)}{rng.choice('ABCDEF')}", p=0.6)
    cab = ("economy", "business", "first")
    f.add("cabin", ("cabin", "travel_class"), ENUM(*cab), rng.choice(cab), p=0.6)
    return ["Passenger {pax}, flight {flight} from {from} to {to} on {date}<seat:, seat {seat}><cabin:, {cabin} class>.",
            "{pax} flies {from} - {to} on {date} with {flight}<cabin: in {cabin}><seat: (seat {seat})>.",
            "Boarding pass: {pax} | {flight} | {from} to {to} | {date}<seat: | seat {seat}><cabin: | {cabin}>"]


@_template("restaurant")
def _(rng, f):
    f.add("name", ("name", "guest_name", "reservation_name"), STR, rng.choice(V.LAST_NAMES))
    n = rng.randint(1, 12)
    f.add("size", ("party_size", "guests", "people"), INT(1, 20), n, V.count_text(rng, n))
    _date(rng, f, "date", ("date", "reservation_date"))
    t, t_text = V.time_of_day(rng, 15, 11, 22)
    f.add("time", ("time", "reservation_time"), TIME, t, t_text)
    f.add("notes", ("notes", "special_requests"), STR, rng.choice(("window seat", "birthday cake", "vegan menu", "high chair")), p=0.4)
    return ["Table for {size} under the name {name} at {time} on {date}<notes: - {notes} please>.",
            "[Please reserve|I'd like to book] a table for {size} on {date} at {time}, name {name}<notes:. Request: {notes}>.",
            "{name}, {size} [people|guests], {date} {time}<notes:, {notes}>"]


@_template("job_posting")
def _(rng, f):
    f.add("company", ("company", "employer", "company_name"), STR, rng.choice(V.COMPANIES))
    f.add("title", ("title", "job_title", "position", "role"), STR, rng.choice(V.JOB_TITLES).title())
    f.add("loc", ("location", "city"), STR, V.city(rng).name)
    kinds = ("full-time", "part-time", "contract", "internship")
    f.add("type", ("employment_type", "contract_type", "type"), ENUM(*kinds), rng.choice(kinds))
    lo = rng.randrange(30000, 90000, 1000)
    hi, stated = lo + rng.randrange(5000, 30000, 1000), float(rng.random() < 0.6)
    f.add("min", ("salary_min", "min_salary"), INT(0), lo, f"{lo:,}", p=stated)
    f.add("max", ("salary_max", "max_salary"), INT(0), hi, f"{hi:,}", p=stated)
    rem = f.add("remote", ("remote", "remote_ok", "is_remote"), BOOL, rng.random() < 0.5, p=0.5)
    f.slots["remote"] = None if rem is None else ("remote possible" if rem else "on-site only")
    return ["{company} is hiring a {title} in {loc}, {type}<min:, salary {min}-{max} EUR><remote:, {remote}>.",
            "[Job|Vacancy|Opening]: {title} at {company} ({loc}) - {type}<min: - {min} to {max} a year><remote: - {remote}>",
            "We are looking for a {type} {title} to join {company} in {loc}.<min: Pay: {min}-{max}.><remote: {remote}.>"]


@_template("job_skills")
def _(rng, f):
    f.add("title", ("title", "role", "job"), STR, rng.choice(V.JOB_TITLES).title())
    f.add("company", ("company", "employer"), STR, rng.choice(V.COMPANIES), p=0.7)
    sk = rng.sample(V.SKILLS, rng.randint(1, 4))
    f.add("skills", ("skills", "required_skills", "requirements"), STRS, sk, V.join_list(rng, sk))
    y = rng.randint(1, 10)
    f.add("years", ("years_experience", "min_years", "experience_years"), INT(0, 40), y, V.count_text(rng, y))
    return ["<company:{company} needs a|We need a> {title} with {years}+ years of experience in {skills}.",
            "{title}<company: ({company})>: requires {skills}; at least {years} years [experience|of experience].",
            "Must know {skills}. {years} years minimum. Role: {title}<company: at {company}>."]


@_template("company_profile")
def _(rng, f):
    f.add("name", ("company_name", "name", "company"), STR, rng.choice(V.COMPANIES))
    f.add("year", ("founded", "founded_year", "year_founded"), INT(1800, 2026), rng.randint(1850, 2024))
    f.add("hq", ("headquarters", "hq_city", "based_in"), STR, V.city(rng).name)
    e = rng.randint(5, 50000)
    f.add("staff", ("employees", "employee_count", "headcount"), INT(1), e, f"{e:,}" if rng.random() < 0.5 else str(e))
    pub = f.add("public", ("public", "is_listed", "publicly_traded"), BOOL, rng.random() < 0.4, p=0.4)
    f.slots["public"] = None if pub is None else ("listed on the stock exchange" if pub else "privately held")
    return ["{name}, founded in {year}, is based in {hq} and has about {staff} employees<public:; it is {public}>.",
            "Based in {hq}, {name} ({year}) employs {staff} people<public: and is {public}>.",
            "{name} - est. {year} - HQ {hq} - {staff} staff<public: - {public}>"]


@_template("invoice")
def _(rng, f):
    f.add("no", ("invoice_number", "invoice_id", "number"), STR, f"INV-{rng.randint(2024, 2026)}-{rng.randint(1, 9999):04d}")
    vendor, client = rng.sample(V.COMPANIES, 2)
    f.add("vendor", ("vendor", "seller", "from"), STR, vendor)
    f.add("client", ("client", "customer", "bill_to"), STR, client)
    _date(rng, f, "due", ("due_date", "due", "payment_due"))
    _, code = _money(rng, f, ("amount", "total", "amount_due"), lo=50, hi=20000)
    f.add("cur", ("currency",), STR, code)
    paid = f.add("paid", ("paid", "is_paid"), BOOL, rng.random() < 0.5)
    f.slots["paid"] = rng.choice(("yes", "paid")) if paid else rng.choice(("no", "unpaid", "open"))
    return ["Invoice {no} from {vendor} to {client}, due {due}, amount {price}, [paid:|status:] {paid}.",
            "{vendor} billed {client} {price} (invoice {no}); payment due {due}; {paid}.",
            "INVOICE {no}\nFrom: {vendor}\nTo: {client}\nDue: {due}\nTotal: {price}\nStatus: {paid}"]


@_template("support_ticket")
def _(rng, f):
    name = V.person(rng)
    f.add("email", ("email", "user_email", "reporter"), EMAIL, V.email(rng, name))
    issue = rng.choice(("login fails", "app crashes on start", "payment declined", "cannot reset password",
                        "sync is slow", "notifications missing"))
    f.add("issue", ("summary", "issue", "problem"), STR, issue)
    plats = ("android", "ios", "web", "windows", "macos")
    f.add("plat", ("platform", "os", "device"), ENUM(*plats), rng.choice(plats))
    pr = ("low", "medium", "high", "urgent")
    f.add("prio", ("priority", "severity"), ENUM(*pr), rng.choice(pr), p=0.7)
    return ["Ticket from {email}: {issue} on {plat}<prio:; priority {prio}>.",
            "User {email} reports that [the|] {issue} ({plat})<prio:. Severity: {prio}>.",
            "<prio:[{prio} priority|Priority {prio}] - >{issue} - {plat} - reported by {email}"]


@_template("weather_obs")
def _(rng, f):
    f.add("city", ("city", "location", "station"), STR, V.city(rng).name)
    t = round(rng.uniform(-20, 40), rng.choice((0, 1)))
    t = int(t) if t == int(t) else t
    f.add("temp", ("temperature", "temp_c", "temperature_c"), {"type": "number"}, t)
    conds = ("sunny", "cloudy", "rainy", "snowy", "windy", "foggy")
    f.add("cond", ("condition", "conditions", "sky"), ENUM(*conds), rng.choice(conds))
    _date(rng, f, "date", ("date", "observed_on"))
    f.add("hum", ("humidity", "humidity_pct"), INT(0, 100), rng.randint(10, 100), p=0.5)
    return ["In {city} it was {temp} degrees and {cond} on {date}<hum:, humidity {hum}%>.",
            "{date}, {city}: {cond}, {temp} °C<hum:, {hum}% humidity>.",
            "Weather log - {city} - {date} - {temp}°C - {cond}<hum: - humidity {hum} percent>"]


@_template("recipe")
def _(rng, f):
    f.add("dish", ("dish", "recipe", "name"), STR, rng.choice(("Pancakes", "Crème brûlée", "Pierogi", "Paella", "Gnocchi", "Shakshuka", "Smørrebrød")))
    s = rng.randint(1, 8)
    f.add("serv", ("servings", "serves", "portions"), INT(1, 20), s, V.count_text(rng, s))
    f.add("min", ("prep_minutes", "minutes", "time_minutes"), INT(1, 600), rng.choice((10, 15, 20, 30, 45, 60, 90)))
    ing = rng.sample(("flour", "milk", "eggs", "butter", "sugar", "rice", "tomatoes", "onions", "potatoes", "cheese"), rng.randint(2, 5))
    f.add("ing", ("ingredients",), STRS, ing, V.join_list(rng, ing))
    veg = f.add("veg", ("vegetarian", "is_vegetarian"), BOOL, rng.random() < 0.6, p=0.5)
    f.slots["veg"] = None if veg is None else ("vegetarian" if veg else "not vegetarian")
    return ["{dish}: serves {serv}, takes {min} minutes, needs {ing}.<veg: It is {veg}.>",
            "To make {dish} for {serv} you need {ing}; it takes about {min} minutes<veg: ({veg})>.",
            "{dish} ({min} min, {serv} portions<veg:, {veg}>) - {ing}"]


@_template("book")
def _(rng, f):
    title = rng.choice(("The Silent Fjord", "Cien Noches", "Der Weg", "Paper Moons", "L'Été Rouge", "Kaze no Uta", "Northern Lights"))
    f.add("title", ("title", "book_title"), STR, title)
    f.add("author", ("author", "written_by"), STR, V.person(rng))
    f.add("year", ("year", "published", "publication_year"), INT(1450, 2026), rng.randint(1900, 2025))
    f.add("pages", ("pages", "page_count"), INT(1, 5000), rng.randint(90, 900), p=0.7)
    g = ("fiction", "mystery", "biography", "science", "poetry", "history")
    f.add("genre", ("genre", "category"), ENUM(*g), rng.choice(g), p=0.5)
    return ["\u201c{title}\u201d by {author}, published in {year}<pages:, {pages} pages><genre: ({genre})>.",
            "{author} wrote {title}<genre:, a {genre} book,> in {year}<pages:; it has {pages} pages>.",
            "{title} - {author} - {year}<pages: - {pages} pp.><genre: - {genre}>"]


@_template("apartment")
def _(rng, f):
    f.add("city", ("city", "location"), STR, V.city(rng).name)
    b = rng.randint(1, 5)
    f.add("beds", ("bedrooms", "rooms"), INT(0, 20), b, V.count_text(rng, b))
    area = rng.randint(25, 180) if rng.random() < 0.7 else round(rng.uniform(25, 180), 1)
    f.add("area", ("area_sqm", "size_m2", "square_meters"), NUM, area)
    _money(rng, f, ("rent", "monthly_rent", "price"), lo=400, hi=4000, code="EUR")
    pets = f.add("pets", ("pets_allowed", "pets"), BOOL, rng.random() < 0.5, p=0.6)
    f.slots["pets"] = None if pets is None else ("pets allowed" if pets else "no pets")
    return ["{beds}-bedroom [flat|apartment] in {city}, {area} m², {price} per month<pets:, {pets}>.",
            "For rent in {city}: {area} square meters, {beds} bedrooms, {price}/month<pets: ({pets})>.",
            "{city} - {beds} bed - {area} sqm - rent {price}<pets: - {pets}>"]


@_template("form_lines")
def _(rng, f):
    name = f.add("name", ("name", "full_name", "applicant"), STR, V.person(rng))
    f.add("age", ("age", "age_years"), INT(0, 130), rng.randint(18, 80))
    f.add("email", ("email", "contact_email"), EMAIL, V.email(rng, name), p=0.7)
    f.add("country", ("country", "nationality"), STR, V.city(rng).country, p=0.6)
    sep = rng.choice(("\n", " | ", "; "))
    return [sep.join(["Name: {name}", "Age: {age}"]) + "<email:" + sep + "Email: {email}><country:" + sep + "Country: {country}>",
            sep.join(["[NAME|Full name] = {name}", "[AGE|Age] = {age}"]) + "<country:" + sep + "Country = {country}><email:" + sep + "E-mail = {email}>"]


@_template("student_record")
def _(rng, f):
    f.add("name", ("student_name", "student", "name"), STR, V.person(rng))
    f.add("id", ("student_id", "id"), STR, str(rng.randint(20200000, 20269999)))
    f.add("subj", ("subject", "course"), STR, rng.choice(("Math", "Physics", "History", "Biology", "Chemistry", "Art")))
    f.add("score", ("score", "grade", "points"), INT(0, 100), rng.randint(30, 100))
    f.add("year", ("year", "school_year"), INT(1, 6), rng.randint(1, 6), p=0.5)
    return ["Student {name} (ID {id}) scored {score} in {subj}<year:, year {year}>.",
            "{subj} results: {name}, student number {id}, {score}/100<year:, in year {year}>.",
            "{name} [got|received] {score} points in {subj}<year: (year {year})>; ID: {id}."]


@_template("delivery_status")
def _(rng, f):
    f.add("track", ("tracking_number", "tracking_id", "parcel_id"), STR, f"{rng.choice(('1Z', 'JD', 'PL'))}{rng.randint(10**8, 10**9 - 1)}")
    f.add("to", ("recipient", "addressee", "name"), STR, V.person(rng))
    st = ("in_transit", "out_for_delivery", "delivered", "delayed")
    s = f.add("status", ("status", "state"), ENUM(*st), rng.choice(st))
    f.slots["status"] = s.replace("_", " ")
    f.add("city", ("city", "current_city"), STR, V.city(rng).name)
    _date(rng, f, "eta", ("expected_date", "eta", "delivery_date"), p=0.6)
    return ["Package {track} for {to} is {status} in {city}<eta:, expected {eta}>.",
            "[Tracking|Parcel] {track}: {status} ({city}) - recipient {to}<eta: - ETA {eta}>",
            "Your parcel {track}, {to}, is {status}; last seen in {city}.<eta: Expected on {eta}.>"]
