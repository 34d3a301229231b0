"""Maps the top-level ``templates/`` folder onto the ``memd.templates`` package.

pyproject.toml holds every other setting; package discovery there cannot add a
package whose folder lives outside ``memd/``, so this hook appends it.
"""

from setuptools import find_packages, setup

setup(
    packages=[*find_packages(include=["memd", "memd.*"]), "memd.templates"],
    package_dir={"memd.templates": "templates"},
)
