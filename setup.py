"""Package layout that pyproject.toml cannot express alone: top-level folders installed as subpackages.

``validators/`` (and its subpackages) installs as ``structgen.validators``; ``grammars/`` as
``structgen.grammars`` (its ``*.lark`` files are package data); the modules of ``examples/`` (``tools.py``,
``tool_impls.py``) as ``structgen.examples``, with the shop database's builder and the alert catalog as its
package data (pyproject.toml), so that an installed structgen finds the example files the training data and
``structgen eval`` read (``structgen.train.data.base.example_file``). Everything else is in pyproject.toml.
"""

from setuptools import find_packages, setup

MAPPED = {"structgen.validators": "validators", "structgen.grammars": "grammars"}
MODULES_ONLY = {"structgen.examples": "examples"}  # its *.py files, not its data folders

packages = find_packages(include=["structgen", "structgen.*"])
package_dir = {}
for name, folder in MAPPED.items():
    packages.append(name)
    package_dir[name] = folder
    for sub in find_packages(where=folder):
        packages.append(f"{name}.{sub}")
        package_dir[f"{name}.{sub}"] = f"{folder}/{sub.replace('.', '/')}"
for name, folder in MODULES_ONLY.items():
    packages.append(name)
    package_dir[name] = folder

setup(packages=packages, package_dir=package_dir)
