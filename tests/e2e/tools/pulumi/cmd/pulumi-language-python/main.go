// Command pulumi-language-python is flyte-apps' own Python language host for the end-to-end suite.
//
// Pulumi's language host lives in a module of its own that is never tagged, and the Go module proxy
// this project can reach serves no version of it. The engine only needs a gRPC server that speaks the
// LanguageRuntime protocol, so this is a small one, written for what `pulumi preview|up|refresh|
// import|destroy`, `--policy-pack`, `pulumi install` and `pulumi package add` ask of a Python project:
//
//   - Run runs the program through the `pulumi-language-python-exec` script of the Python SDK
//     (installed next to this binary);
//   - RunPlugin runs policy packs (`python -m pulumi.policy` behind the SDK's policy proxy) and Python
//     resource plugins, such as a component package's provider (`pulumi package add|get-schema <dir>`,
//     and every consumer's deployment): `python <dir> <args>` with the virtualenv of its
//     PulumiPlugin.yaml;
//   - InstallDependencies creates the virtualenv and installs requirements.txt into it (a program's,
//     a policy pack's or a plugin's);
//   - GetRequiredPackages lists the resource plugins the virtualenv's packages ask for in their
//     pulumi-plugin.json (with its parameterization);
//   - GeneratePackage is pkg/v3's python code generator, the call Pulumi's host makes, and Link adds
//     the generated SDK to the program's dependencies with the toolchain's own LinkPackages (pip: its
//     path in requirements.txt, which the install that follows puts into the virtualenv), so a
//     Python program can consume a package with `pulumi package add`;
//   - GetProgramDependencies and About (`pulumi about`).
//
// Virtualenvs and toolchains are resolved by the SDK's own `python/toolchain` package, so the
// `virtualenv` and `toolchain` options of Pulumi.yaml, PulumiPolicy.yaml and PulumiPlugin.yaml mean
// what they mean to Pulumi's host. Not offered (Unimplemented or refused): `pulumi new` prompts and
// templates (RuntimeOptionsPrompts, Template), program conversion (GenerateProgram,
// GenerateProject), `pulumi package pack-sdk` (Pack), the `typechecker` option, debugging, and plugins
// without a __main__.py (Pulumi's host runs a pyproject-only one as `python -m pulumi.run.plugin`);
// GetRequiredPlugins is left Unimplemented, as by Pulumi's own host.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	codegen "github.com/pulumi/pulumi/pkg/v3/codegen/python"
	"github.com/pulumi/pulumi/pkg/v3/codegen/schema"
	sdk "github.com/pulumi/pulumi/sdk/v3"
	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/pulumi/pulumi/sdk/v3/python/toolchain"

	"flyteapps.e2e/pulumi/internal/langhost"
)

const name = "pulumi-language-python"

// executorName is the SDK's program runner, looked for next to this executable.
const executorName = "pulumi-language-python-exec"

// pluginMetadataScript prints, as JSON, every installed distribution that ships a
// pulumi-plugin.json: {name, version, plugin (the file's parsed content)}.
const pluginMetadataScript = `
import importlib.metadata, json, sys
found = []
for dist in importlib.metadata.distributions():
    for path in dist.files or ():
        if path.name == "pulumi-plugin.json":
            try:
                found.append({"name": dist.metadata["Name"], "version": dist.version,
                              "plugin": json.loads(path.read_text())})
            except (OSError, ValueError):
                pass
            break
json.dump(found, sys.stdout)
`

type host struct {
	*langhost.Host

	executor string
}

func main() {
	langhost.Serve(name, func(h *langhost.Host) pulumirpc.LanguageRuntimeServer {
		self, err := os.Executable()
		if err != nil {
			langhost.Fail(name, "cannot find this executable: %v", err)
		}
		executor := filepath.Join(filepath.Dir(self), executorName)
		if _, err := os.Stat(executor); err != nil {
			langhost.Fail(name, "missing executor %s: %v", executor, err)
		}
		h.Generate = generate
		return &host{Host: h, executor: executor}
	})
}

// pythonOptions reads the runtime options of Pulumi.yaml or PulumiPolicy.yaml. A plugin without a
// virtualenv option gets "venv", as Pulumi's own host gives it.
func pythonOptions(info *pulumirpc.ProgramInfo, isPlugin bool) (toolchain.PythonOptions, error) {
	opts := toolchain.PythonOptions{Root: info.GetRootDirectory(), ProgramDir: info.GetProgramDirectory()}
	options := info.GetOptions().AsMap()
	if value, ok := options["virtualenv"]; ok {
		text, isText := value.(string)
		if !isText {
			return opts, errors.New("the runtime option virtualenv must be a string")
		}
		opts.Virtualenv = text
	}
	if value, ok := options["toolchain"]; ok {
		switch value {
		case "pip":
			opts.Toolchain = toolchain.Pip
		case "uv":
			opts.Toolchain = toolchain.Uv
		case "poetry":
			opts.Toolchain = toolchain.Poetry
		default:
			return opts, fmt.Errorf("unsupported runtime option toolchain: %v", value)
		}
	}
	if _, ok := options["typechecker"]; ok {
		return opts, errors.New("the runtime option typechecker is not supported by this language host")
	}
	if isPlugin && opts.Virtualenv == "" && (opts.Toolchain == toolchain.Pip || opts.Toolchain == toolchain.Auto) {
		opts.Virtualenv = "venv"
	}
	return opts, nil
}

func resolve(info *pulumirpc.ProgramInfo, isPlugin bool) (toolchain.Toolchain, error) {
	opts, err := pythonOptions(info, isPlugin)
	if err != nil {
		return nil, err
	}
	return toolchain.ResolveToolchain(opts)
}

// GetRequiredPackages lists the resource plugins of the virtualenv's Pulumi packages, each at the
// version its pulumi-plugin.json names (or the package's own version when the file names none), with
// the parameterization the file names, as Pulumi's host reads it.
func (h *host) GetRequiredPackages(
	ctx context.Context, req *pulumirpc.GetRequiredPackagesRequest,
) (*pulumirpc.GetRequiredPackagesResponse, error) {
	tc, err := resolve(req.GetInfo(), false)
	if err != nil {
		return nil, err
	}
	if err := tc.ValidateVenv(ctx); err != nil {
		return nil, err
	}
	cmd, err := tc.Command(ctx, "-c", pluginMetadataScript)
	if err != nil {
		return nil, err
	}
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("listing the virtualenv's Pulumi packages: %w", err)
	}
	var found []struct {
		Name    string                  `json:"name"`
		Version string                  `json:"version"`
		Plugin  plugin.PulumiPluginJSON `json:"plugin"`
	}
	if err := json.Unmarshal(out, &found); err != nil {
		return nil, fmt.Errorf("reading the virtualenv's Pulumi packages: %w", err)
	}
	packages := []*pulumirpc.PackageDependency{}
	for _, dist := range found {
		if !dist.Plugin.Resource {
			continue
		}
		name := dist.Plugin.Name
		if name == "" {
			name = strings.TrimPrefix(dist.Name, "pulumi-")
		}
		ver := dist.Plugin.Version
		if ver == "" {
			if !releaseVersion.MatchString(dist.Version) {
				continue // a pre-release whose plugin version cannot be derived
			}
			ver = dist.Version
		}
		dep := &pulumirpc.PackageDependency{
			Name: name, Kind: string(apitype.ResourcePlugin), Version: "v" + strings.TrimPrefix(ver, "v"),
			Server: dist.Plugin.Server,
		}
		if p := dist.Plugin.Parameterization; p != nil {
			dep.Parameterization = &pulumirpc.PackageParameterization{Name: p.Name, Version: p.Version, Value: p.Value}
		}
		if p := dist.Plugin.ExtensionParameterization; p != nil {
			dep.Extension = &pulumirpc.PackageParameterization{Name: p.Name, Version: p.Version, Value: p.Value}
		}
		packages = append(packages, dep)
	}
	return &pulumirpc.GetRequiredPackagesResponse{Packages: packages}, nil
}

var releaseVersion = regexp.MustCompile(`^\d+\.\d+\.\d+$`)

// Run runs the program through the SDK's executor with the engine's config in PULUMI_CONFIG.
func (h *host) Run(ctx context.Context, req *pulumirpc.RunRequest) (*pulumirpc.RunResponse, error) {
	tc, err := langhost.RunOptions(h.Host, req.GetInfo(), func(info *pulumirpc.ProgramInfo) (toolchain.Toolchain, error) {
		return resolve(info, false)
	})
	if err != nil {
		return nil, err
	}
	if err := tc.ValidateVenv(ctx); err != nil {
		return nil, err
	}
	args := langhost.Flags([]string{h.executor},
		"monitor", req.GetMonitorAddress(),
		"engine", h.EngineAddress(),
		"project", req.GetProject(),
		"root_directory", req.GetInfo().GetRootDirectory(),
		"stack", req.GetStack(),
		"pwd", req.GetPwd(),
		"dry_run", strconv.FormatBool(req.GetDryRun()),
		"parallel", strconv.Itoa(int(req.GetParallel())),
		"organization", req.GetOrganization())
	args = append(args, req.GetInfo().GetEntryPoint())
	args = append(args, req.GetArgs()...)

	// A stack without config is `{}`, not `null` (which the SDK cannot read).
	config, secretJSON, err := langhost.ConfigJSON(req.GetConfig(), req.GetConfigSecretKeys())
	if err != nil {
		return nil, err
	}

	cmd, stop, err := h.CommandFrom(ctx, func(runCtx context.Context) (*exec.Cmd, error) {
		return tc.Command(runCtx, args...)
	})
	if err != nil {
		return nil, err
	}
	defer stop()
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, "PULUMI_CONFIG="+config, "PULUMI_CONFIG_SECRET_KEYS="+secretJSON)

	return langhost.RunResponse(cmd.Run()), nil
}

// InstallDependencies creates the virtualenv if needed and installs requirements.txt into it (what
// the CLI asks for before it runs a policy pack with `virtualenv: venv`).
func (h *host) InstallDependencies(
	req *pulumirpc.InstallDependenciesRequest, server pulumirpc.LanguageRuntime_InstallDependenciesServer,
) error {
	tc, err := resolve(req.GetInfo(), req.GetIsPlugin())
	if err != nil {
		return err
	}
	return langhost.InstallDependencies(req, server, func(stdout, stderr io.Writer) error {
		return tc.InstallDependencies(server.Context(), req.GetInfo().GetProgramDirectory(),
			req.GetUseLanguageVersionTools(), true, stdout, stderr)
	})
}

// RunPlugin starts a Python plugin. A policy pack (kind analyzer) runs as `python -u -m pulumi.policy
// <engine> <pack directory>` in the pack's directory, behind the SDK's policy proxy, which hands the
// stack's configuration over in the environment as Pulumi's own host does. Other plugins (a resource
// provider such as a component package's) run their directory's __main__.py, `python <dir> <args>`,
// in the engine's working directory.
func (h *host) RunPlugin(req *pulumirpc.RunPluginRequest, server pulumirpc.LanguageRuntime_RunPluginServer) error {
	ctx := server.Context()
	analyzer := req.GetKind() == string(apitype.AnalyzerPlugin)
	tc, err := resolve(req.GetInfo(), !analyzer)
	if err != nil {
		return err
	}
	// Before the policy proxy prints a port: a missing virtualenv is then this one error, not a
	// connection refused on the proxy's port.
	if err := tc.ValidateVenv(ctx); err != nil {
		return err
	}
	var args []string
	if analyzer {
		args = append([]string{"-u", "-m", "pulumi.policy"}, req.GetArgs()...)
		args = append(args, req.GetInfo().GetProgramDirectory())
	} else {
		args = append([]string{req.GetInfo().GetProgramDirectory()}, req.GetArgs()...)
	}
	cmd, err := tc.Command(ctx, args...)
	if err != nil {
		return err
	}
	closer, stdout, stderr, err := rpcutil.MakeRunPluginStreams(server, false)
	if err != nil {
		return err
	}
	defer closer.Close()
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}

	var proxy *sdk.PolicyProxy
	if analyzer {
		cmd.Dir = req.GetInfo().GetProgramDirectory()
		proxy, stdout, err = sdk.NewPolicyProxy(ctx, stdout)
		if err != nil {
			return fmt.Errorf("starting the policy proxy: %w", err)
		}
		stack, err := proxy.AwaitConfiguration(ctx)
		if err != nil {
			return fmt.Errorf("waiting for the stack's configuration: %w", err)
		}
		if stack != nil {
			cmd.Env = append(cmd.Env, policyEnvironment(stack)...)
		}
	} else {
		cmd.Dir = req.GetPwd()
	}
	cmd.Env = append(cmd.Env, req.GetEnv()...)
	cmd.Stdout, cmd.Stderr = stdout, stderr

	if err := cmd.Start(); err != nil {
		return fmt.Errorf("could not start the plugin: %w", err)
	}
	if proxy != nil {
		return proxy.Attach(ctx, cmd)
	}
	if err := cmd.Wait(); err != nil {
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			return server.Send(&pulumirpc.RunPluginResponse{
				Output: &pulumirpc.RunPluginResponse_Exitcode{Exitcode: int32(exitErr.ExitCode())}, //nolint:gosec
			})
		}
		return err
	}
	return closer.Close()
}

func policyEnvironment(stack *pulumirpc.AnalyzerStackConfigureRequest) []string {
	env := []string{"PULUMI_DRY_RUN=" + strconv.FormatBool(stack.GetDryRun())}
	for name, value := range map[string]string{
		"PULUMI_ORGANIZATION": stack.GetOrganization(),
		"PULUMI_PROJECT":      stack.GetProject(),
		"PULUMI_STACK":        stack.GetStack(),
	} {
		if value != "" {
			env = append(env, name+"="+value)
		}
	}
	if config := stack.GetConfig(); config != nil {
		if text, err := json.Marshal(config); err == nil {
			env = append(env, "PULUMI_CONFIG="+string(text))
		}
	}
	return env
}

// GetProgramDependencies lists the virtualenv's packages (pulumi about, pulumi whoami -v).
func (h *host) GetProgramDependencies(
	ctx context.Context, req *pulumirpc.GetProgramDependenciesRequest,
) (*pulumirpc.GetProgramDependenciesResponse, error) {
	tc, err := resolve(req.GetInfo(), false)
	if err != nil {
		return nil, err
	}
	listed, err := tc.ListPackages(ctx, req.GetTransitiveDependencies())
	if err != nil {
		return nil, err
	}
	return langhost.Dependencies(listed), nil
}

// About names the interpreter the program runs with.
func (h *host) About(ctx context.Context, req *pulumirpc.AboutRequest) (*pulumirpc.AboutResponse, error) {
	tc, err := resolve(req.GetInfo(), false)
	if err != nil {
		return nil, err
	}
	info, err := tc.About(ctx)
	if err != nil {
		return nil, err
	}
	return &pulumirpc.AboutResponse{Executable: info.PythonExecutable, Version: info.PythonVersion.String()}, nil
}

// generate writes the package's Python SDK (GeneratePackage) with pkg/v3's python code generator,
// the call Pulumi's host makes (a setup.py package named pulumi_<name>, unless the schema's python
// section names another; `local` changes nothing in Python).
func generate(
	pkg *schema.Package, loader schema.ReferenceLoader, req *pulumirpc.GeneratePackageRequest,
) (map[string][]byte, error) {
	return codegen.GeneratePackage(name, pkg, req.GetExtraFiles(), loader)
}

// Link adds each generated SDK to the program's dependencies with the toolchain's own LinkPackages,
// as Pulumi's host does: pip replaces any requirements.txt line naming the package (or its path) by
// the SDK's path relative to the project (`sdks/<name>`); uv runs `uv add --no-sync <path>` and poetry
// `poetry add --lock <path>` (neither is exercised by the suite). A uv or poetry project that has no
// pyproject.toml yet (only requirements.txt, before its first `pulumi install`) is linked as pip links
// it. The CLI installs dependencies next, which installs the SDK into the virtualenv.
func (h *host) Link(ctx context.Context, req *pulumirpc.LinkRequest) (*pulumirpc.LinkResponse, error) {
	info := req.GetInfo()
	opts, err := pythonOptions(info, false)
	if err != nil {
		return nil, err
	}

	packages := map[string]string{} // distribution name -> path
	var imports strings.Builder
	sdk := func(dep *pulumirpc.LinkRequest_LinkDependency) error {
		packages["pulumi"] = dep.GetPath()
		return nil
	}
	err = langhost.LinkPackages(ctx, req, "python", codegen.Importer, sdk, func(
		dep *pulumirpc.LinkRequest_LinkDependency, pkg *schema.Package,
	) error {
		var importName, packageName string
		if python, ok := pkg.Language["python"].(codegen.PackageInfo); ok && python.PackageName != "" {
			importName, packageName = python.PackageName, python.PackageName
		}
		if importName == "" {
			importName = strings.ReplaceAll(pkg.Name, "-", "_")
		}
		if packageName == "" {
			packageName = codegen.PyPack(pkg.Namespace, pkg.Name)
		}
		packages[packageName] = dep.GetPath()
		fmt.Fprintf(&imports, "  import %s as %s\n", packageName, importName)
		return nil
	})
	if err != nil {
		return nil, err
	}

	if opts.Toolchain != toolchain.Pip {
		dir := info.GetProgramDirectory()
		if _, err := os.Stat(filepath.Join(dir, "pyproject.toml")); errors.Is(err, os.ErrNotExist) {
			if _, err := os.Stat(filepath.Join(dir, "requirements.txt")); errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("no pyproject.toml or requirements.txt found in %s", dir)
			}
			opts.Toolchain = toolchain.Pip
		}
	}
	tc, err := toolchain.ResolveToolchain(opts)
	if err != nil {
		return nil, err
	}
	if err := tc.LinkPackages(ctx, packages); err != nil {
		return nil, fmt.Errorf("linking packages: %w", err)
	}

	instructions := "You can import the SDK in your Python code with:\n\n"
	if len(req.GetPackages()) > 1 {
		instructions = "You can import the SDKs in your Python code with:\n\n"
	}
	return &pulumirpc.LinkResponse{ImportInstructions: instructions + imports.String()}, nil
}
