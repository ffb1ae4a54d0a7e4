"""The pure core: stack config -> validated models -> app specs -> manifests; status rules and log
parsing. Imports neither ``pulumi`` nor ``kubernetes`` and does no I/O (no files, no network), so
every caller (the Pulumi components, the CLI, the policy rules, the tests) gets the same answer."""
