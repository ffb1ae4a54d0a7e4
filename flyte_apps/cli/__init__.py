"""The day-2 commands of ``flyte-apps`` (status, watch, logs): each module registers its typer
command on the app in ``flyte_apps.cli.main``; ``common`` holds what they share (cluster and platform
settings, app-name resolution, exit codes)."""
