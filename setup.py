"""Maps the top-level rules/ directory into the wheel as dbwatch/rules (see SPEC §2), and
docs/schema/ (the JSON Schemas of every machine-readable output) as dbwatch/schema."""
from setuptools import find_packages, setup

setup(
    packages=find_packages(include=["dbwatch", "dbwatch.*"]) + ["dbwatch.rules", "dbwatch.schema"],
    package_dir={"dbwatch.rules": "rules", "dbwatch.schema": "docs/schema"},
    package_data={"dbwatch": ["probes/sql/*/*.sql", "actions/sql/*/*.sql", "py.typed", "web/templates/*"], "dbwatch.rules": ["*.toml"], "dbwatch.schema": ["*.json"]},
)
