"""The ground floor: errors, value records, versions, settings, safe files, the process runner, git."""
