"""The flyte-apps policy rules: pure functions over resources in Pulumi's wire form.

Each rule is a plain ``(args, report_violation)`` function over camelCase props, exactly as a Pulumi
policy pack receives them, so three callers share one implementation:

* ``policies/__main__.py`` builds the CrossGuard ``PolicyPack`` from ``flyte_apps.policy.pack``;
* ``flyte-apps check`` renders a stack offline and runs the rules through ``flyte_apps.policy.runner``;
* the tests call the rules directly with a reporter that collects messages.

Modules: ``wire`` (the wire form, unknown values, type tokens, logical names), ``pods`` (pod templates
and containers), the rules in ``app_rules``, ``pod_rules`` and ``manager_rules``, ``registry`` (each
rule's name, description, level and settings schema), ``runner`` (policy-pack config and offline
evaluation) and ``pack`` (the rules as pulumi-policy ``Policy`` objects).

Purity contract: every module but ``pack`` imports neither ``pulumi``, ``pulumi_policy`` nor
``kubernetes`` (only the pure core); ``pack`` alone imports ``pulumi_policy``, and nothing here
constructs the ``PolicyPack`` (its constructor starts a gRPC server and blocks).
"""
