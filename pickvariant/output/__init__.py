"""What commands show: the decision, the catalog listing, the support report."""
