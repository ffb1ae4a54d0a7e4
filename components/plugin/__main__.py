"""The component package's plugin: the engine runs this file with the engine's address as argument,
and talks to the provider on the port it prints."""

import sys

from pulumi.provider.experimental.server import main

from components.package import FlyteAppsProvider, package_version

version = package_version()
main(sys.argv[1:], version, FlyteAppsProvider(version))
