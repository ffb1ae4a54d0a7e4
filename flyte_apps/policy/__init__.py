"""The policy rules: pure functions over resources in Pulumi's wire form, shared by the policy pack,
``flyte-apps check`` and the tests (only ``pack`` imports ``pulumi_policy``)."""
