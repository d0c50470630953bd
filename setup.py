"""Package layout that pyproject.toml cannot express alone: top-level folders installed as subpackages.

``validators/`` (and its subpackages) installs as ``structgen.validators``; ``grammars/`` as
``structgen.grammars`` (its ``*.lark`` files are package data). Everything else is in pyproject.toml.
"""

from setuptools import find_packages, setup

MAPPED = {"structgen.validators": "validators", "structgen.grammars": "grammars"}

packages = find_packages(include=["structgen", "structgen.*"])
package_dir = {}
for name, folder in MAPPED.items():
    packages.append(name)
    package_dir[name] = folder
    for sub in find_packages(where=folder):
        packages.append(f"{name}.{sub}")
        package_dir[f"{name}.{sub}"] = f"{folder}/{sub.replace('.', '/')}"

setup(packages=packages, package_dir=package_dir)
