"""The flyte-apps policy pack. Constructing ``PolicyPack`` starts its gRPC server and blocks, so this
file builds the pack and nothing else; the rules live in ``flyte_apps.policy`` (installed into the
pack's virtualenv by ``requirements.txt``), where ``flyte-apps check`` and the tests import them."""

from pulumi_policy import PolicyPack

from flyte_apps.policy.pack import PACK_DESCRIPTION, PACK_NAME, build_policies

PolicyPack(name=PACK_NAME, policies=build_policies(), description=PACK_DESCRIPTION)
