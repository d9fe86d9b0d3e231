"""State: what is live, in Terraform's shape (format_version, serial, lineage, resources by address)."""
