"""Pure: the Flyte manager's objects and generated config, from the stack config key ``flyte-apps:manager``.

One generated ``config.yaml`` serves both generations of the manager image (the seed's, and Flyte's
current main with its apps subsystem), because the manager's config loader (flytestdlib on viper)
ignores keys it does not know."""
