// Command pulumi-language-nodejs is flyte-apps' own Node.js language host for the end-to-end suite.
//
// Pulumi's host is a module of its own (sdk/nodejs/cmd/pulumi-language-nodejs) that the Go module
// proxy this project can reach does not serve. The engine only needs a gRPC server that speaks the
// LanguageRuntime protocol, so this is a small one, written for what a TypeScript or JavaScript
// program that consumes a package asks of it in `pulumi preview|up|refresh|destroy`, `pulumi
// install` and `pulumi package add`:
//
//   - Run starts the program through @pulumi/pulumi's own `cmd/run` (resolved from the program's
//     node_modules, as Pulumi's host does), with the same arguments and environment: the engine's
//     config in PULUMI_CONFIG, PULUMI_NODEJS_TYPESCRIPT (TypeScript through the ts-node the SDK
//     resolves or vendors), and the `typescript`, `tsconfig` and `nodeargs` runtime options;
//   - InstallDependencies, GetProgramDependencies and Link use the SDK's own `nodejs/npm` package
//     (npm, yarn, pnpm or bun, chosen by the `packagemanager` option and the lock files as Pulumi's
//     host chooses), so `pulumi install` runs `npm install` and Link adds a `file:` dependency on the
//     generated SDK to package.json;
//   - GeneratePackage is pkg/v3's nodejs code generator, the call Pulumi's host makes;
//   - GetRequiredPackages reads the `pulumi` section of every package.json under node_modules.
//
// Not offered (Unimplemented): running Node.js plugins and policy packs (RunPlugin), `pulumi new`
// (RuntimeOptionsPrompts, Template), program conversion (GenerateProgram, GenerateProject), `pulumi
// package pack-sdk` (Pack), debugging, the bun runtime, and the deprecated synchronous invokes: the
// program talks to the engine's resource monitor directly, with no proxy and no `--sync` pipes.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/google/shlex"

	codegen "github.com/pulumi/pulumi/pkg/v3/codegen/nodejs"
	"github.com/pulumi/pulumi/pkg/v3/codegen/schema"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/config"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	"github.com/pulumi/pulumi/sdk/v3/go/common/workspace"
	"github.com/pulumi/pulumi/sdk/v3/nodejs/npm"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"

	"flyteapps.e2e/pulumi/internal/langhost"
)

const name = "pulumi-language-nodejs"

// runModule is the SDK's program runner, resolved from the program directory.
const runModule = "@pulumi/pulumi/cmd/run"

type host struct {
	*langhost.Host
}

func main() {
	langhost.Serve(name, func(h *langhost.Host) pulumirpc.LanguageRuntimeServer {
		h.Generate = generate
		return &host{Host: h}
	})
}

// options are the runtime options of Pulumi.yaml that this host reads.
type options struct {
	typescript     bool
	tsconfig       string
	nodeargs       []string
	packageManager npm.PackageManagerType
	production     bool
}

func parseOptions(info *pulumirpc.ProgramInfo) (options, error) {
	opts := options{typescript: true, packageManager: npm.AutoPackageManager}
	for key, value := range info.GetOptions().AsMap() {
		var ok bool
		switch key {
		case "typescript":
			opts.typescript, ok = value.(bool)
		case "production":
			opts.production, ok = value.(bool)
		case "tsconfig":
			opts.tsconfig, ok = value.(string)
		case "nodeargs":
			var text string
			if text, ok = value.(string); ok {
				var err error
				if opts.nodeargs, err = shlex.Split(text); err != nil {
					return opts, fmt.Errorf("the runtime option nodeargs: %w", err)
				}
			}
		case "packagemanager":
			var text string
			if text, ok = value.(string); ok {
				switch text {
				case "auto", "npm", "yarn", "pnpm", "bun":
					opts.packageManager = npm.PackageManagerType(text)
				default:
					return opts, fmt.Errorf("the runtime option packagemanager must be auto, npm, yarn, pnpm or bun, not %q", text)
				}
			}
		default:
			ok = true // options of other hosts' (or newer) making are not this host's business
		}
		if !ok {
			return opts, fmt.Errorf("the runtime option %s has the wrong type (%T)", key, value)
		}
	}
	return opts, nil
}

// resolveModule is `require.resolve(module)` from dir, with the program's own node.
func resolveModule(ctx context.Context, node, dir, module string) (string, error) {
	script := fmt.Sprintf(`try { console.log(require.resolve(%q)); } catch (e) {`+
		` console.error(e.code === "MODULE_NOT_FOUND" ? "cannot find %s: has pulumi install (npm install) run?" : e.message);`+
		` process.exit(1); }`, module, module)
	cmd := exec.CommandContext(ctx, node, "-e", script)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) && len(exitErr.Stderr) > 0 {
			return "", errors.New(strings.TrimSpace(string(exitErr.Stderr)))
		}
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// Run runs the program with `node <@pulumi/pulumi/cmd/run> --monitor ... <entry point>`.
func (h *host) Run(ctx context.Context, req *pulumirpc.RunRequest) (*pulumirpc.RunResponse, error) {
	info := req.GetInfo()
	opts, err := langhost.RunOptions(h.Host, info, parseOptions)
	if err != nil {
		return nil, err
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return &pulumirpc.RunResponse{Error: "could not find node on the PATH: " + err.Error()}, nil
	}
	runner, err := resolveModule(ctx, node, info.GetProgramDirectory(), runModule)
	if err != nil {
		return &pulumirpc.RunResponse{Error: err.Error()}, nil
	}

	args := append([]string{}, opts.nodeargs...)
	args = langhost.Flags(append(args, runner),
		"monitor", req.GetMonitorAddress(),
		"engine", h.EngineAddress(),
		"organization", req.GetOrganization(),
		"project", req.GetProject(),
		"root-directory", info.GetRootDirectory(),
		"stack", req.GetStack(),
		"pwd", info.GetProgramDirectory())
	if req.GetDryRun() {
		args = append(args, "--dry-run")
	}
	args = langhost.Flags(args, "parallel", strconv.Itoa(int(req.GetParallel())))
	args = append(args, info.GetEntryPoint())
	args = append(args, req.GetArgs()...)

	// The SDK reads config keys in the older `<namespace>:config:<name>` form as well; Pulumi's host
	// hands them over in that form for older SDKs, and so does this one.
	legacy := make(map[string]string, len(req.GetConfig()))
	for key, value := range req.GetConfig() {
		parsed, err := config.ParseKey(key)
		if err != nil {
			return nil, err
		}
		legacy[parsed.Namespace()+":config:"+parsed.Name()] = value
	}
	configJSON, secretsJSON, err := langhost.ConfigJSON(legacy, req.GetConfigSecretKeys())
	if err != nil {
		return nil, err
	}

	cmd, stop := h.Command(ctx, node, args...)
	defer stop()
	cmd.Dir = req.GetPwd()
	cmd.Env = append(os.Environ(), "PULUMI_CONFIG="+configJSON, "PULUMI_CONFIG_SECRET_KEYS="+secretsJSON)
	if opts.typescript {
		cmd.Env = append(cmd.Env, "PULUMI_NODEJS_TYPESCRIPT=true")
	}
	if opts.tsconfig != "" {
		cmd.Env = append(cmd.Env, "PULUMI_NODEJS_TSCONFIG_PATH="+opts.tsconfig)
	}
	// Node may set its standard streams non-blocking; wrapping ours makes exec copy through pipes.
	cmd.Stdout = struct{ io.Writer }{os.Stdout}
	cmd.Stderr = struct{ io.Writer }{os.Stderr}
	return langhost.RunResponse(cmd.Run()), nil
}

// InstallDependencies installs package.json's dependencies with the project's package manager
// (`npm install` unless a lock file or the packagemanager option names another), at the root of
// the npm or yarn workspace the program is in, if any.
func (h *host) InstallDependencies(
	req *pulumirpc.InstallDependenciesRequest, server pulumirpc.LanguageRuntime_InstallDependenciesServer,
) error {
	opts, err := parseOptions(req.GetInfo())
	if err != nil {
		return err
	}
	return langhost.InstallDependencies(req, server, func(stdout, stderr io.Writer) error {
		dir := req.GetInfo().GetProgramDirectory()
		if root, err := npm.FindWorkspaceRoot(dir); err == nil {
			fmt.Fprintf(stdout, "Detected workspace root at %s\n", root)
			dir = root
		} else if !errors.Is(err, npm.ErrNotInWorkspace) {
			return fmt.Errorf("looking for a workspace root: %w", err)
		}
		fmt.Fprintln(stdout, "Installing dependencies...")
		manager, err := npm.Install(server.Context(), opts.packageManager, dir, opts.production, stdout, stderr)
		if err != nil {
			return fmt.Errorf("%s install failed: %w", manager, err)
		}
		fmt.Fprintln(stdout, "Finished installing dependencies")
		return nil
	})
}

// GetProgramDependencies lists the installed packages (pulumi about, pulumi whoami -v).
func (h *host) GetProgramDependencies(
	ctx context.Context, req *pulumirpc.GetProgramDependenciesRequest,
) (*pulumirpc.GetProgramDependenciesResponse, error) {
	opts, err := parseOptions(req.GetInfo())
	if err != nil {
		return nil, err
	}
	manager, err := npm.ResolvePackageManager(opts.packageManager, req.GetInfo().GetProgramDirectory())
	if err != nil {
		return nil, err
	}
	listed, err := manager.ListPackages(ctx, req.GetInfo().GetProgramDirectory(), req.GetTransitiveDependencies())
	if err != nil {
		return nil, err
	}
	return langhost.Dependencies(listed), nil
}

// About names node and its version, and the package manager.
func (h *host) About(ctx context.Context, req *pulumirpc.AboutRequest) (*pulumirpc.AboutResponse, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("could not find node on the PATH: %w", err)
	}
	out, err := exec.CommandContext(ctx, node, "--version").Output()
	if err != nil {
		return nil, fmt.Errorf("node --version: %w", err)
	}
	response := &pulumirpc.AboutResponse{Executable: node, Version: strings.TrimSpace(string(out))}
	opts, err := parseOptions(req.GetInfo())
	if err != nil {
		return nil, err
	}
	if manager, err := npm.ResolvePackageManager(opts.packageManager, req.GetInfo().GetProgramDirectory()); err == nil {
		response.Metadata = map[string]string{"packagemanager": manager.Name()}
	}
	return response, nil
}

// packageJSON is what GetRequiredPackages reads of a package.json.
type packageJSON struct {
	Name    string                  `json:"name"`
	Version string                  `json:"version"`
	Pulumi  plugin.PulumiPluginJSON `json:"pulumi"`
}

// GetRequiredPackages lists the packages under node_modules whose package.json says
// `"pulumi": {"resource": true}`: the plugin each needs, at the version it names (or the package's
// own), with its parameterization. Symbolic links (the `file:` SDKs that Link adds) are followed;
// nested policy packs are not looked into.
func (h *host) GetRequiredPackages(
	_ context.Context, req *pulumirpc.GetRequiredPackagesRequest,
) (*pulumirpc.GetRequiredPackagesResponse, error) {
	root := filepath.Join(req.GetInfo().GetProgramDirectory(), "node_modules")
	found := []*pulumirpc.PackageDependency{}
	visited := map[string]bool{}
	var walk func(dir string)
	walk = func(dir string) {
		real, err := filepath.EvalSymlinks(dir)
		if err != nil || visited[real] {
			return
		}
		visited[real] = true
		if policy, _ := workspace.DetectPolicyPackPathAt(real); policy != "" {
			return
		}
		if dep := readPackage(filepath.Join(real, "package.json")); dep != nil {
			found = append(found, dep)
		}
		entries, err := os.ReadDir(real)
		if err != nil {
			return
		}
		for _, entry := range entries {
			if entry.IsDir() || entry.Type()&fs.ModeSymlink != 0 {
				walk(filepath.Join(real, entry.Name()))
			}
		}
	}
	walk(root)
	return &pulumirpc.GetRequiredPackagesResponse{Packages: distinct(found)}, nil
}

// distinct drops repeated packages (a local SDK's postinstall copies its package.json into bin/).
func distinct(packages []*pulumirpc.PackageDependency) []*pulumirpc.PackageDependency {
	seen := map[string]bool{}
	kept := packages[:0]
	for _, dep := range packages {
		key := strings.Join([]string{dep.GetName(), dep.GetVersion(), dep.GetServer(),
			dep.GetParameterization().GetName(), dep.GetParameterization().GetVersion(),
			string(dep.GetParameterization().GetValue()),
			dep.GetExtension().GetName(), dep.GetExtension().GetVersion(), string(dep.GetExtension().GetValue())}, "\x00")
		if !seen[key] {
			seen[key] = true
			kept = append(kept, dep)
		}
	}
	return kept
}

// readPackage is the package a package.json asks for, or nil.
func readPackage(path string) *pulumirpc.PackageDependency {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var info packageJSON
	if json.Unmarshal(data, &info) != nil || !info.Pulumi.Resource {
		return nil
	}
	pluginName := info.Pulumi.Name
	if pluginName == "" {
		if !strings.HasPrefix(info.Name, "@pulumi/") {
			return nil // a third-party package must name its plugin
		}
		pluginName = strings.TrimPrefix(info.Name, "@pulumi/")
	}
	version := info.Pulumi.Version
	if version == "" {
		version = info.Version
	}
	if version == "" {
		return nil
	}
	dep := &pulumirpc.PackageDependency{
		Name: pluginName, Kind: "resource", Version: "v" + strings.TrimPrefix(version, "v"), Server: info.Pulumi.Server,
	}
	if p := info.Pulumi.Parameterization; p != nil {
		dep.Parameterization = &pulumirpc.PackageParameterization{Name: p.Name, Version: p.Version, Value: p.Value}
	}
	if p := info.Pulumi.ExtensionParameterization; p != nil {
		dep.Extension = &pulumirpc.PackageParameterization{Name: p.Name, Version: p.Version, Value: p.Value}
	}
	return dep
}

// generate writes the package's Node.js SDK (GeneratePackage; a local one, compiled by its own
// postinstall, when the engine asks for local).
func generate(
	pkg *schema.Package, loader schema.ReferenceLoader, req *pulumirpc.GeneratePackageRequest,
) (map[string][]byte, error) {
	return codegen.GeneratePackage(name, pkg, req.GetExtraFiles(), req.GetLocalDependencies(), req.GetLocal(), loader)
}

// npmPackageName is the name the generated SDK has in package.json.
func npmPackageName(pkg *schema.Package) string {
	if info, ok := pkg.Language["nodejs"].(codegen.NodePackageInfo); ok && info.PackageName != "" {
		return info.PackageName
	}
	if pkg.Namespace != "" {
		return "@" + pkg.Namespace + "/" + pkg.Name
	}
	return "@pulumi/" + pkg.Name
}

// Link adds each generated SDK to package.json as a `file:` dependency (and to npm's allowScripts,
// so its postinstall compiles it), with the package manager's own `pkg set`; the CLI installs
// dependencies next.
func (h *host) Link(ctx context.Context, req *pulumirpc.LinkRequest) (*pulumirpc.LinkResponse, error) {
	info := req.GetInfo()
	opts, err := parseOptions(info)
	if err != nil {
		return nil, err
	}
	manager, err := npm.ResolvePackageManager(opts.packageManager, info.GetProgramDirectory())
	if err != nil {
		return nil, err
	}
	moduleSyntax := opts.typescript || opts.tsconfig != ""
	if !moduleSyntax {
		if manifest, _, err := npm.ReadPackageManifest(info.GetProgramDirectory()); err == nil {
			moduleSyntax = manifest["type"] == "module"
		}
	}
	var imports strings.Builder
	err = langhost.LinkPackages(ctx, req, "nodejs", codegen.Importer, nil, func(
		dep *pulumirpc.LinkRequest_LinkDependency, pkg *schema.Package,
	) error {
		packageName := npmPackageName(pkg)
		if err := manager.Link(ctx, info.GetProgramDirectory(), packageName, dep.GetPath()); err != nil {
			return err
		}
		if moduleSyntax {
			fmt.Fprintf(&imports, "  import * as %s from %q;\n", identifier(pkg.Name), packageName)
		} else {
			fmt.Fprintf(&imports, "  const %s = require(%q);\n", identifier(pkg.Name), packageName)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	language := "JavaScript"
	if opts.typescript {
		language = "TypeScript"
	}
	return &pulumirpc.LinkResponse{
		ImportInstructions: "You can import the SDK in your " + language + " code with:\n\n" + imports.String(),
	}, nil
}

// identifier is a package name in camel case (`my-pkg` -> `myPkg`).
func identifier(pkgName string) string {
	parts := strings.FieldsFunc(pkgName, func(r rune) bool { return r == '-' || r == '_' || r == '.' })
	for i := 1; i < len(parts); i++ {
		parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
	}
	return strings.Join(parts, "")
}
