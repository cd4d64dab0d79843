"""The rules: the one compatibility predicate, the decision and its explanation, the cluster plan."""
