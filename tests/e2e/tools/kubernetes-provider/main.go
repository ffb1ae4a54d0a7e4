// Command pulumi-resource-kubernetes is a thin wrapper that builds the
// pulumi-kubernetes resource provider plugin from its published Go module,
// for the flyte-apps real-engine e2e suite.
//
// The two embedded JSON files are NOT committed. The e2e build step
// (tests/e2e/build_tools.py) copies this directory to a scratch build
// directory and writes them there before running `go build`:
//
//	schema-embed.json            the provider module's
//	                             cmd/pulumi-resource-kubernetes/schema.json,
//	                             with its top-level "version" set to the
//	                             provider version (e.g. "4.25.0", no "v")
//	terraform-mapping-embed.json the module's
//	                             cmd/pulumi-resource-kubernetes/terraform-mapping.json,
//	                             re-serialized compactly
//
// The version reported by GetPluginInfo comes from the linker flag
// -X github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version.Version=4.25.0
package main

import (
	_ "embed"

	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/provider"
	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version"
)

const providerName = "kubernetes"

//go:embed schema-embed.json
var pulumiSchema []byte

//go:embed terraform-mapping-embed.json
var terraformMapping []byte

func main() {
	provider.Serve(providerName, version.Version, pulumiSchema, terraformMapping)
}
