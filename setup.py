"""Maps the top-level rules/ directory into the wheel as dbwatch/rules (see SPEC §2)."""
from setuptools import find_packages, setup

setup(
    packages=find_packages(include=["dbwatch", "dbwatch.*"]) + ["dbwatch.rules"],
    package_dir={"dbwatch.rules": "rules"},
    package_data={"dbwatch": ["probes/sql/*/*.sql", "actions/sql/*/*.sql", "py.typed", "web/templates/*"], "dbwatch.rules": ["*.toml"]},
)
