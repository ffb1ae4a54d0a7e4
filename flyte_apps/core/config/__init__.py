"""The stack config, section by section: ``keys`` (top-level keys), ``names`` (what Kubernetes and
Flyte accept as names), ``kit`` (the base model, value types, errors with key paths, suggestions),
``models`` (platform and apps as written, and validated), ``rules`` (cross-field and cross-app
checks), ``spec_rules`` (the keys only Flyte's app spec carries: profile, links, inputs),
``domain_rules`` (custom domains: hosts, TLS secrets, hosts claimed twice), ``payload`` (an app's
container and pod template merged into one pod spec, as Flyte's SDK merges them), ``pod_rules`` and
``gpu_rules`` (that pod spec, its GPUs, accelerator and shared memory) and ``load`` (platform and apps,
one pass). ``flyte_apps.core.stack`` puts every section together, the manager's and Knative's included."""
