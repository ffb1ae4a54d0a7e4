"""The stack config, section by section: models, value types and the rules that check them by key path."""
