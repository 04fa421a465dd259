"""A sample plugin package (test data for stuntset.checks.install_package)."""
