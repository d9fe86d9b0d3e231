"""State: what is live, in Terraform's shape (format_version, serial, lineage, resources by address).

backend.py: the interface (read with a version, conditional write, lock with a lease, force-unlock)
and the rebase that re-applies a writer's records after a lost race; local.py: the JSON file with a
backup; s3.py: one S3 object written with If-Match, its lock an object created with If-None-Match;
lock.py: the local lock file; journal.py: apply's per-job records (the local `<state>.journal`)
and their fold; factory.py: the backend a workspace's `state:` names.
"""
