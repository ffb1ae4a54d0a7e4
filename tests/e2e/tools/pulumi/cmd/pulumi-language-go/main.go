// Command pulumi-language-go is flyte-apps' own Go language host for the end-to-end suite.
//
// Pulumi's host is a module of its own (sdk/go/pulumi-language-go) that the Go module proxy this
// project can reach does not serve. The engine only needs a gRPC server that speaks the
// LanguageRuntime protocol, so this is a small one, written for what a Go program that consumes a
// package asks of it in `pulumi preview|up|refresh|destroy`, `pulumi install` and `pulumi package
// add`:
//
//   - Run builds the program with `go build` (or runs the prebuilt `binary` of the runtime options;
//     `buildTarget` names where to build) and runs it with the PULUMI_* variables the Go SDK reads
//     (monitor, engine, project, stack, organization, root directory, config, secret keys, dry run,
//     parallelism), as Pulumi's host does;
//   - InstallDependencies is `go mod tidy`; GetProgramDependencies reads go.mod;
//   - GeneratePackage is pkg/v3's Go code generator, the call Pulumi's host makes, and Link adds a
//     `replace` of the generated SDK's module by its directory to go.mod;
//   - GetRequiredPackages reads the pulumi-plugin.json of each required module (`go list -m`).
//
// Not offered (Unimplemented): running Go plugins (RunPlugin), `pulumi new` (RuntimeOptionsPrompts,
// Template), program conversion (GenerateProgram, GenerateProject), `pulumi package pack-sdk`
// (Pack), debugging, the deprecated `go run` mode (PULUMI_GO_USE_RUN), and module downloads of its
// own: GetRequiredPackages skips a module the module cache does not hold.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/blang/semver"
	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"

	codegen "github.com/pulumi/pulumi/pkg/v3/codegen/go"
	"github.com/pulumi/pulumi/pkg/v3/codegen/schema"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"

	"flyteapps.e2e/pulumi/internal/langhost"
)

const name = "pulumi-language-go"

type host struct {
	*langhost.Host
}

func main() {
	langhost.Serve(name, func(h *langhost.Host) pulumirpc.LanguageRuntimeServer { return &host{Host: h} })
}

// options are the runtime options of Pulumi.yaml that this host reads.
type options struct {
	binary      string // a prebuilt program, looked for on the PATH
	buildTarget string // where to build the program (else a temporary file, removed after the run)
}

func parseOptions(info *pulumirpc.ProgramInfo) (options, error) {
	var opts options
	values := info.GetOptions().AsMap()
	for key, target := range map[string]*string{"binary": &opts.binary, "buildTarget": &opts.buildTarget} {
		if value, ok := values[key]; ok {
			text, isText := value.(string)
			if !isText {
				return opts, fmt.Errorf("the runtime option %s must be a string", key)
			}
			*target = text
		}
	}
	if opts.binary != "" && opts.buildTarget != "" {
		return opts, errors.New("the runtime options binary and buildTarget cannot both be set")
	}
	return opts, nil
}

func goBinary() (string, error) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("could not find go on the PATH: %w", err)
	}
	return gobin, nil
}

// build compiles the program in dir to target (a temporary file when target is empty).
func build(ctx context.Context, engine pulumirpc.EngineClient, dir, target string) (string, error) {
	if matches, _ := filepath.Glob(filepath.Join(dir, "*.go")); len(matches) == 0 {
		return "", fmt.Errorf("no Go files in %s to build", dir)
	}
	gobin, err := goBinary()
	if err != nil {
		return "", err
	}
	if target == "" {
		f, err := os.CreateTemp("", "pulumi-go.*")
		if err != nil {
			return "", err
		}
		target = f.Name()
		if err := f.Close(); err != nil {
			return "", err
		}
	} else if !filepath.IsAbs(target) {
		target = filepath.Join(dir, target)
	}
	logEphemeral(ctx, engine, "Compiling the program ...")
	cmd := exec.CommandContext(ctx, gobin, "build", "-buildvcs=false", "-trimpath", "-ldflags", "-w -s", "-o", target)
	cmd.Dir = dir
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build failed: %w\n%s", err, strings.TrimSpace(output.String()))
	}
	logEphemeral(ctx, engine, "Finished compiling")
	return target, nil
}

// logEphemeral shows a passing status line in the engine's display.
func logEphemeral(ctx context.Context, engine pulumirpc.EngineClient, message string) {
	if engine != nil {
		_, _ = engine.Log(ctx, &pulumirpc.LogRequest{Severity: pulumirpc.LogSeverity_INFO, Message: message, Ephemeral: true})
	}
}

// Run builds the program and runs it with the RunRequest in PULUMI_* variables.
func (h *host) Run(ctx context.Context, req *pulumirpc.RunRequest) (*pulumirpc.RunResponse, error) {
	info := req.GetInfo()
	opts, err := langhost.RunOptions(h.Host, info, parseOptions)
	if err != nil {
		return nil, err
	}
	engine, closeEngine, err := langhost.Engine(h.EngineAddress())
	if err != nil {
		return nil, err
	}
	defer closeEngine()

	program := ""
	if opts.binary != "" {
		if program, err = exec.LookPath(opts.binary); err != nil {
			return nil, fmt.Errorf("could not find the program %s: %w", opts.binary, err)
		}
	} else {
		if program, err = build(ctx, engine, info.GetProgramDirectory(), opts.buildTarget); err != nil {
			return nil, err
		}
		if opts.buildTarget == "" {
			defer os.Remove(program)
		}
	}

	configJSON, secretsJSON, err := langhost.ConfigJSON(req.GetConfig(), req.GetConfigSecretKeys())
	if err != nil {
		return nil, err
	}
	env := os.Environ()
	for key, value := range map[string]string{
		pulumi.EnvOrganization:        req.GetOrganization(),
		pulumi.EnvProject:             req.GetProject(),
		pulumi.EnvPulumiRootDirectory: info.GetRootDirectory(),
		pulumi.EnvStack:               req.GetStack(),
		pulumi.EnvConfig:              configJSON,
		pulumi.EnvConfigSecretKeys:    secretsJSON,
		pulumi.EnvDryRun:              strconv.FormatBool(req.GetDryRun()),
		pulumi.EnvParallel:            strconv.Itoa(int(req.GetParallel())),
		pulumi.EnvMonitor:             req.GetMonitorAddress(),
		pulumi.EnvEngine:              h.EngineAddress(),
	} {
		if value != "" {
			env = append(env, key+"="+value)
		}
	}
	cmd, stop := h.Command(ctx, program, req.GetArgs()...)
	defer stop()
	cmd.Dir = req.GetPwd()
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	return langhost.RunResponse(cmd.Run()), nil
}

// InstallDependencies runs `go mod tidy` in the program directory.
func (h *host) InstallDependencies(
	req *pulumirpc.InstallDependenciesRequest, server pulumirpc.LanguageRuntime_InstallDependenciesServer,
) error {
	gobin, err := goBinary()
	if err != nil {
		return err
	}
	return langhost.InstallDependencies(req, server, func(stdout, stderr io.Writer) error {
		fmt.Fprintln(stdout, "Installing dependencies...")
		cmd := exec.CommandContext(server.Context(), gobin, "mod", "tidy")
		cmd.Dir = req.GetInfo().GetProgramDirectory()
		cmd.Stdout, cmd.Stderr = stdout, stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("go mod tidy failed: %w", err)
		}
		fmt.Fprintln(stdout, "Finished installing dependencies")
		return nil
	})
}

// goMod is the go.mod that governs dir (it may be in a parent directory), parsed.
func goMod(ctx context.Context, dir string) (string, *modfile.File, error) {
	gobin, err := goBinary()
	if err != nil {
		return "", nil, err
	}
	cmd := exec.CommandContext(ctx, gobin, "list", "-m", "-f", "{{.GoMod}}")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out, err := cmd.Output()
	if err != nil {
		return "", nil, fmt.Errorf("go list -m in %s: %w", dir, err)
	}
	file := strings.TrimSpace(string(out))
	if file == "" || file == os.DevNull {
		return "", nil, fmt.Errorf("no go.mod for %s", dir)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return "", nil, err
	}
	parsed, err := modfile.Parse(file, data, nil)
	if err != nil {
		return "", nil, err
	}
	return file, parsed, nil
}

// GetProgramDependencies lists go.mod's requirements (the direct ones unless transitive); a module
// replaced by a directory has no version.
func (h *host) GetProgramDependencies(
	ctx context.Context, req *pulumirpc.GetProgramDependenciesRequest,
) (*pulumirpc.GetProgramDependenciesResponse, error) {
	_, mod, err := goMod(ctx, req.GetInfo().GetProgramDirectory())
	if err != nil {
		return nil, err
	}
	replaced := map[string]bool{}
	for _, r := range mod.Replace {
		replaced[r.Old.Path] = true
	}
	deps := []*pulumirpc.DependencyInfo{}
	for _, r := range mod.Require {
		if r.Indirect && !req.GetTransitiveDependencies() {
			continue
		}
		version := r.Mod.Version
		if replaced[r.Mod.Path] {
			version = ""
		}
		deps = append(deps, &pulumirpc.DependencyInfo{Name: r.Mod.Path, Version: version})
	}
	return &pulumirpc.GetProgramDependenciesResponse{Dependencies: deps}, nil
}

// About names go and its version.
func (h *host) About(ctx context.Context, _ *pulumirpc.AboutRequest) (*pulumirpc.AboutResponse, error) {
	gobin, err := goBinary()
	if err != nil {
		return nil, err
	}
	out, err := exec.CommandContext(ctx, gobin, "version").Output()
	if err != nil {
		return nil, fmt.Errorf("go version: %w", err)
	}
	return &pulumirpc.AboutResponse{Executable: gobin, Version: strings.TrimSpace(string(out))}, nil
}

// listedModule is what GetRequiredPackages reads of `go list -m -json`.
type listedModule struct {
	Path    string
	Version string
	Dir     string
}

// GetRequiredPackages lists the required modules that carry a pulumi-plugin.json saying
// `"resource": true` (in the module's root, go/, go/*/ or */): the plugin each needs, at the version
// the file names or the module's own (a pseudo-version's base release).
func (h *host) GetRequiredPackages(
	ctx context.Context, req *pulumirpc.GetRequiredPackagesRequest,
) (*pulumirpc.GetRequiredPackagesResponse, error) {
	none := &pulumirpc.GetRequiredPackagesResponse{Packages: []*pulumirpc.PackageDependency{}}
	file, mod, err := goMod(ctx, req.GetInfo().GetProgramDirectory())
	if err != nil || len(mod.Require) == 0 {
		return none, nil //nolint:nilerr // a program without go.mod needs no packages we can name
	}
	gobin, err := goBinary()
	if err != nil {
		return nil, err
	}
	args := []string{"list", "-m", "-json"}
	for _, r := range mod.Require {
		args = append(args, r.Mod.Path)
	}
	cmd := exec.CommandContext(ctx, gobin, args...)
	cmd.Dir = filepath.Dir(file)
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out, err := cmd.Output()
	if err != nil {
		return none, nil //nolint:nilerr // as Pulumi's host: a module list that fails names no packages
	}
	packages := none.Packages
	decoder := json.NewDecoder(bytes.NewReader(out))
	for decoder.More() {
		var m listedModule
		if err := decoder.Decode(&m); err != nil {
			return nil, fmt.Errorf("reading go list -m: %w", err)
		}
		if m.Dir == "" {
			continue
		}
		if dep := modulePackage(m); dep != nil {
			packages = append(packages, dep)
		}
	}
	return &pulumirpc.GetRequiredPackagesResponse{Packages: packages}, nil
}

// modulePackage is the package a module's pulumi-plugin.json asks for, or nil.
func modulePackage(m listedModule) *pulumirpc.PackageDependency {
	candidates := []string{filepath.Join(m.Dir, "pulumi-plugin.json"), filepath.Join(m.Dir, "go", "pulumi-plugin.json")}
	for _, pattern := range []string{filepath.Join(m.Dir, "go", "*", "pulumi-plugin.json"), filepath.Join(m.Dir, "*", "pulumi-plugin.json")} {
		matches, _ := filepath.Glob(pattern)
		candidates = append(candidates, matches...)
	}
	for _, candidate := range candidates {
		info, err := plugin.LoadPulumiPluginJSON(candidate)
		if err != nil {
			continue
		}
		if !info.Resource {
			return nil
		}
		pluginName := info.Name
		if pluginName == "" {
			// github.com/pulumi/pulumi-aws/sdk/v6 -> aws
			parts := strings.Split(m.Path, "/")
			if len(parts) < 3 || !strings.Contains(parts[2], "-") {
				return nil
			}
			pluginName = strings.SplitN(parts[2], "-", 2)[1]
		}
		version := info.Version
		if version == "" {
			version = releaseOf(m.Version)
		}
		if version == "" {
			return nil
		}
		dep := &pulumirpc.PackageDependency{
			Name: pluginName, Kind: "resource", Version: "v" + strings.TrimPrefix(version, "v"), Server: info.Server,
		}
		if p := info.Parameterization; p != nil {
			dep.Parameterization = &pulumirpc.PackageParameterization{Name: p.Name, Version: p.Version, Value: p.Value}
		}
		if p := info.ExtensionParameterization; p != nil {
			dep.Extension = &pulumirpc.PackageParameterization{Name: p.Name, Version: p.Version, Value: p.Value}
		}
		return dep
	}
	return nil
}

// releaseOf is a module version as a release: a pseudo-version counts as the release before it
// (v1.29.1-0.2020... -> v1.29.0), as Pulumi's host reads it; "" when there is none.
func releaseOf(version string) string {
	v, err := semver.ParseTolerant(version)
	if err != nil {
		return ""
	}
	if module.IsPseudoVersion(version) {
		if v.Major == 0 && v.Minor == 0 && v.Patch == 0 {
			return ""
		}
		if v.Patch > 0 {
			v.Patch--
		}
		return fmt.Sprintf("v%d.%d.%d", v.Major, v.Minor, v.Patch)
	}
	return version
}

// GeneratePackage writes the package's Go SDK (with a go.mod of its own when the CLI asks for a
// packable one, as `pulumi package add` does).
func (h *host) GeneratePackage(
	_ context.Context, req *pulumirpc.GeneratePackageRequest,
) (*pulumirpc.GeneratePackageResponse, error) {
	if len(req.GetExtraFiles()) > 0 {
		return nil, errors.New("overlays are not supported for Go")
	}
	return langhost.GeneratePackage(req, func(
		pkg *schema.Package, _ schema.ReferenceLoader, req *pulumirpc.GeneratePackageRequest,
	) (map[string][]byte, error) {
		return codegen.GeneratePackage(name, pkg, req.GetLocalDependencies())
	})
}

// Link adds to go.mod a `replace` of each generated SDK's module by its directory (the CLI then
// runs InstallDependencies, `go mod tidy`, which requires it once the program imports it).
func (h *host) Link(ctx context.Context, req *pulumirpc.LinkRequest) (*pulumirpc.LinkResponse, error) {
	info := req.GetInfo()
	file, mod, err := goMod(ctx, info.GetProgramDirectory())
	if err != nil {
		return nil, err
	}

	// replacement is an SDK's directory, absolute and as a replace directive names it (relative to
	// go.mod's directory).
	replacement := func(dep *pulumirpc.LinkRequest_LinkDependency) (string, string, error) {
		sdkDir := dep.GetPath()
		if !filepath.IsAbs(sdkDir) {
			sdkDir = filepath.Join(info.GetRootDirectory(), sdkDir)
		}
		relative, err := filepath.Rel(filepath.Dir(file), sdkDir)
		if err != nil {
			return "", "", err
		}
		relative = filepath.ToSlash(relative)
		if !strings.HasPrefix(relative, "../") {
			relative = "./" + relative // a replacement directory must start with ./ or ../
		}
		return sdkDir, relative, nil
	}
	sdk := func(dep *pulumirpc.LinkRequest_LinkDependency) error {
		_, relative, err := replacement(dep)
		if err != nil {
			return err
		}
		return mod.AddReplace("github.com/pulumi/pulumi/sdk/v3", "", relative, "")
	}
	var imports strings.Builder
	err = langhost.LinkPackages(ctx, req, "go", codegen.Importer, sdk, func(
		dep *pulumirpc.LinkRequest_LinkDependency, pkg *schema.Package,
	) error {
		sdkDir, relative, err := replacement(dep)
		if err != nil {
			return err
		}
		modulePath, importPath := sdkPaths(pkg, sdkDir)
		if err := mod.AddReplace(modulePath, "", relative, ""); err != nil {
			return fmt.Errorf("adding a replace of %s: %w", modulePath, err)
		}
		fmt.Fprintf(&imports, "    %q\n", importPath)
		return nil
	})
	if err != nil {
		return nil, err
	}
	data, err := mod.Format()
	if err != nil {
		return nil, err
	}
	stat, err := os.Stat(file)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(file, data, stat.Mode().Perm()); err != nil {
		return nil, err
	}
	return &pulumirpc.LinkResponse{
		ImportInstructions: "You can import the SDK in your Go code with:\n\n  import (\n" + imports.String() + "  )\n",
	}, nil
}

// sdkPaths are the module path of a generated SDK (its go.mod's, when it has one) and the import
// path of its root package, as the code generator makes them.
func sdkPaths(pkg *schema.Package, sdkDir string) (string, string) {
	modulePath, importPath := codegen.ExtractModulePath(pkg.Reference()), codegen.ExtractImportBasePath(pkg.Reference())
	if pkg.SupportPack {
		modulePath, importPath, _ = codegen.ModuleAndImportPath(pkg)
	}
	if data, err := os.ReadFile(filepath.Join(sdkDir, "go.mod")); err == nil {
		if written := modfile.ModulePath(data); written != "" && written != modulePath {
			importPath = path.Join(written, strings.TrimPrefix(importPath, modulePath+"/"))
			modulePath = written
		}
	}
	return modulePath, importPath
}
