// Package langhost holds what flyte-apps' own Python, Node.js and Go language hosts share: serving
// the LanguageRuntime protocol on a loopback port the way the engine expects (print the port, watch
// the engine's health), the Handshake, running a program as a child the engine can cancel, the
// streams of InstallDependencies, the answer to GetProgramDependencies, and the schema side of
// `pulumi package add`: binding a schema for code generation and loading the schema of a package to
// link. Each host is a main package of its own next to this one (../../cmd).
package langhost

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/blang/semver"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/pulumi/pulumi/pkg/v3/codegen/schema"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	"github.com/pulumi/pulumi/sdk/v3/go/common/version"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

// EngineHealthWindow is how long the engine may be unreachable before a host exits on its own.
const EngineHealthWindow = 5 * time.Minute

// ExitAfterUserMessage is the exit code with which the SDKs say they have already reported the error.
const ExitAfterUserMessage = 32

// Host is the state every language host has: the engine's address, once known, and the context that
// ends the programs it runs (on Cancel, or when the engine goes away). It answers Handshake,
// GetPluginInfo and Cancel, and GeneratePackage with Generate; a host embeds it and adds the rest.
// What neither implements is Unimplemented.
type Host struct {
	pulumirpc.UnimplementedLanguageRuntimeServer

	Name     string    // the host's executable name, for messages
	Generate Generator // the host's code generator, for GeneratePackage; nil: Unimplemented

	mu            sync.Mutex
	engineAddress string
	runs          context.Context
	stopRuns      context.CancelFunc
	shutdown      context.CancelFunc
}

// EngineAddress is the engine's address: from the command line or from Handshake.
func (h *Host) EngineAddress() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.engineAddress
}

// Runs is the context programs and plugins run under: done once the engine cancels or goes away.
func (h *Host) Runs() context.Context { return h.runs }

// RunOptions starts a Run: it refuses one before the engine's address is known (from the command
// line or Handshake), then reads the program's runtime options with parse.
func RunOptions[O any](h *Host, info *pulumirpc.ProgramInfo, parse func(*pulumirpc.ProgramInfo) (O, error)) (O, error) {
	if h.EngineAddress() == "" {
		var none O
		return none, errors.New("Run before Handshake: no engine address")
	}
	return parse(info)
}

// Serve parses the host's command line (`-version`, `-tracing`, then the engine address), serves
// the runtime that register makes on a loopback port and prints that port, as the engine expects of
// a plugin; it returns once the engine is gone or the host is interrupted.
func Serve(name string, register func(*Host) pulumirpc.LanguageRuntimeServer) {
	showVersion := flag.Bool("version", false, "print the version and exit")
	flag.String("tracing", "", "accepted for compatibility; tracing is not emitted")
	flag.Parse()
	if *showVersion {
		fmt.Println(version.Version)
		return
	}

	signals, release := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer release()
	stopServing := make(chan bool)
	go func() { <-signals.Done(); close(stopServing) }()

	runs, stopRuns := context.WithCancel(context.Background())
	h := &Host{Name: name, runs: runs, stopRuns: stopRuns, shutdown: func() { stopRuns(); release() }}
	if flag.NArg() > 0 {
		h.engineAddress = flag.Arg(0)
		if err := rpcutil.Healthcheck(signals, h.engineAddress, EngineHealthWindow, h.shutdown); err != nil {
			Fail(name, "cannot watch the engine's health: %v", err)
		}
	}
	runtime := register(h)
	served, err := rpcutil.ServeWithOptions(rpcutil.ServeOptions{
		Cancel: stopServing,
		Init: func(srv *grpc.Server) error {
			pulumirpc.RegisterLanguageRuntimeServer(srv, runtime)
			return nil
		},
	})
	if err != nil {
		Fail(name, "cannot serve: %v", err)
	}
	fmt.Printf("%d\n", served.Port)
	if err := <-served.Done; err != nil {
		Fail(name, "stopped serving: %v", err)
	}
}

// Fail prints a message and exits 1.
func Fail(name, format string, args ...any) {
	fmt.Fprintf(os.Stderr, name+": "+format+"\n", args...)
	os.Exit(1)
}

// Handshake records the engine's address and watches its health.
func (h *Host) Handshake(
	_ context.Context, req *pulumirpc.LanguageHandshakeRequest,
) (*pulumirpc.LanguageHandshakeResponse, error) {
	if req.GetEngineAddress() == "" {
		return nil, errors.New("Handshake without an engine address")
	}
	h.mu.Lock()
	h.engineAddress = req.GetEngineAddress()
	h.mu.Unlock()
	if err := rpcutil.Healthcheck(context.Background(), req.GetEngineAddress(), EngineHealthWindow, h.shutdown); err != nil {
		return nil, fmt.Errorf("cannot watch the engine's health: %w", err)
	}
	return &pulumirpc.LanguageHandshakeResponse{}, nil
}

// GetPluginInfo reports the SDK version this host was built with.
func (h *Host) GetPluginInfo(context.Context, *emptypb.Empty) (*pulumirpc.PluginInfo, error) {
	return &pulumirpc.PluginInfo{Version: version.Version}, nil
}

// Cancel stops every running program.
func (h *Host) Cancel(context.Context, *emptypb.Empty) (*emptypb.Empty, error) {
	h.stopRuns()
	return &emptypb.Empty{}, nil
}

// GeneratePackage writes the SDK that the host's Generate makes of the request's schema (see the
// function GeneratePackage).
func (h *Host) GeneratePackage(
	ctx context.Context, req *pulumirpc.GeneratePackageRequest,
) (*pulumirpc.GeneratePackageResponse, error) {
	if h.Generate == nil {
		return h.UnimplementedLanguageRuntimeServer.GeneratePackage(ctx, req)
	}
	return GeneratePackage(req, h.Generate)
}

// Engine is a client of the engine at address (for log lines); close it after use.
func Engine(address string) (pulumirpc.EngineClient, func(), error) {
	conn, err := grpc.NewClient(address,
		grpc.WithTransportCredentials(insecure.NewCredentials()), rpcutil.GrpcChannelOptions())
	if err != nil {
		return nil, nil, fmt.Errorf("connecting to the engine: %w", err)
	}
	return pulumirpc.NewEngineClient(conn), func() { _ = conn.Close() }, nil
}

// Command is a program run for a request: stopped (an interrupt, then a kill five seconds later) when
// the request ends or the engine cancels.
func (h *Host) Command(ctx context.Context, name string, args ...string) (*exec.Cmd, context.CancelFunc) {
	cmd, stop, _ := h.CommandFrom(ctx, func(runCtx context.Context) (*exec.Cmd, error) {
		return exec.CommandContext(runCtx, name, args...), nil
	})
	return cmd, stop
}

// CommandFrom is Command for a program that newCmd builds (bound to the context it is given, as
// exec.CommandContext binds it), such as a toolchain's interpreter.
func (h *Host) CommandFrom(
	ctx context.Context, newCmd func(context.Context) (*exec.Cmd, error),
) (*exec.Cmd, context.CancelFunc, error) {
	runCtx, stop := context.WithCancel(h.runs)
	context.AfterFunc(ctx, stop)
	cmd, err := newCmd(runCtx)
	if err != nil {
		stop()
		return nil, nil, err
	}
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 5 * time.Second
	return cmd, stop, nil
}

// InstallDependencies runs install with the output streams of an InstallDependencies request (a
// terminal's when the CLI has one) and closes them after it.
func InstallDependencies(
	req *pulumirpc.InstallDependenciesRequest, server pulumirpc.LanguageRuntime_InstallDependenciesServer,
	install func(stdout, stderr io.Writer) error,
) error {
	closer, stdout, stderr, err := rpcutil.MakeInstallDependenciesStreams(server, req.GetIsTerminal())
	if err != nil {
		return err
	}
	defer closer.Close()
	if err := install(stdout, stderr); err != nil {
		return err
	}
	return closer.Close()
}

// Dependencies answers GetProgramDependencies with the packages a toolchain lists.
func Dependencies(listed []plugin.DependencyInfo) *pulumirpc.GetProgramDependenciesResponse {
	deps := make([]*pulumirpc.DependencyInfo, 0, len(listed))
	for _, dep := range listed {
		deps = append(deps, &pulumirpc.DependencyInfo{Name: dep.Name, Version: dep.Version})
	}
	return &pulumirpc.GetProgramDependenciesResponse{Dependencies: deps}
}

// Flags appends `--name value` to args for each name and value of pairs whose value is not empty.
func Flags(args []string, pairs ...string) []string {
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] != "" {
			args = append(args, "--"+pairs[i], pairs[i+1])
		}
	}
	return args
}

// RunResponse is what the engine is told of a program that ran: nothing on success, Bail when the
// program has reported its own error, else the exit code or the reason it could not start.
func RunResponse(err error) *pulumirpc.RunResponse {
	_ = os.Stdout.Sync()
	_ = os.Stderr.Sync()
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return &pulumirpc.RunResponse{}
	case errors.As(err, &exitErr) && exitErr.ExitCode() == ExitAfterUserMessage:
		return &pulumirpc.RunResponse{Bail: true}
	case errors.As(err, &exitErr):
		return &pulumirpc.RunResponse{Error: fmt.Sprintf("program exited with non-zero exit code: %d", exitErr.ExitCode())}
	default:
		return &pulumirpc.RunResponse{Error: fmt.Sprintf("could not run the program: %v", err)}
	}
}

// ConfigJSON is the engine's configuration as the SDKs read it from PULUMI_CONFIG, and the secret
// keys as PULUMI_CONFIG_SECRET_KEYS.
func ConfigJSON(config map[string]string, secretKeys []string) (string, string, error) {
	if config == nil {
		config = map[string]string{}
	}
	if secretKeys == nil {
		secretKeys = []string{}
	}
	configText, err := json.Marshal(config)
	if err != nil {
		return "", "", err
	}
	secretText, err := json.Marshal(secretKeys)
	if err != nil {
		return "", "", err
	}
	return string(configText), string(secretText), nil
}

// Generator writes one language's SDK for a bound package: file name -> content.
type Generator func(pkg *schema.Package, loader schema.ReferenceLoader, req *pulumirpc.GeneratePackageRequest) (
	map[string][]byte, error)

// GeneratePackage binds the request's schema (through the engine's schema loader, for the packages
// it refers to) and writes what generate makes of it into the request's directory. Binding errors
// are returned as diagnostics, as the engine expects.
func GeneratePackage(req *pulumirpc.GeneratePackageRequest, generate Generator) (*pulumirpc.GeneratePackageResponse, error) {
	client, err := schema.NewLoaderClient(req.GetLoaderTarget())
	if err != nil {
		return nil, err
	}
	defer client.Close()
	loader := schema.NewCachedLoader(client)

	var spec schema.PackageSpec
	if err := json.Unmarshal([]byte(req.GetSchema()), &spec); err != nil {
		return nil, fmt.Errorf("reading the schema: %w", err)
	}
	pkg, diags, err := schema.BindSpec(spec, loader, schema.ValidationOptions{AllowDanglingReferences: true})
	if err != nil {
		return nil, err
	}
	diagnostics := plugin.HclDiagnosticsToRPCDiagnostics(diags)
	if diags.HasErrors() {
		return &pulumirpc.GeneratePackageResponse{Diagnostics: diagnostics}, nil
	}
	files, err := generate(pkg, loader, req)
	if err != nil {
		return nil, err
	}
	for name, data := range files {
		target := filepath.Join(req.GetDirectory(), name)
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(target, data, 0o644); err != nil { //nolint:gosec // generated source, meant to be read
			return nil, err
		}
	}
	return &pulumirpc.GeneratePackageResponse{Diagnostics: diagnostics}, nil
}

// LinkPackages goes through the packages a LinkRequest names, in order. The Pulumi SDK itself (a
// package named "pulumi", built locally), which has no schema, goes to sdk when the host links it
// apart (sdk not nil); every other package goes to link with its schema, loaded through the engine's
// schema loader that the request names, its language section read with importer.
func LinkPackages(
	ctx context.Context, req *pulumirpc.LinkRequest, language string, importer schema.Language,
	sdk func(dep *pulumirpc.LinkRequest_LinkDependency) error,
	link func(dep *pulumirpc.LinkRequest_LinkDependency, pkg *schema.Package) error,
) error {
	loader, err := newLoader(req.GetLoaderTarget(), language, importer)
	if err != nil {
		return err
	}
	defer loader.Close()
	for _, dep := range req.GetPackages() {
		if sdk != nil && dep.GetPackage().GetName() == "pulumi" {
			if err := sdk(dep); err != nil {
				return err
			}
			continue
		}
		pkg, err := loader.Package(ctx, dep.GetPackage())
		if err != nil {
			return err
		}
		if err := link(dep, pkg); err != nil {
			return err
		}
	}
	return nil
}

// loader is the engine's schema loader named by a LinkRequest, for one language's host.
type loader struct {
	client   *schema.LoaderClient
	cached   schema.ReferenceLoader
	language string
	importer schema.Language
}

// newLoader connects to the engine's schema loader at target; the packages it loads have the
// language section of their schema read with importer.
func newLoader(target, language string, importer schema.Language) (*loader, error) {
	client, err := schema.NewLoaderClient(target)
	if err != nil {
		return nil, err
	}
	return &loader{client: client, cached: schema.NewCachedLoader(client), language: language, importer: importer}, nil
}

// Close disconnects from the loader.
func (l *loader) Close() error { return l.client.Close() }

// Package loads the schema of a package the engine asks to link (name, version, parameterization),
// with the loader's language section imported.
func (l *loader) Package(ctx context.Context, dep *pulumirpc.PackageDependency) (*schema.Package, error) {
	descriptor := &schema.PackageDescriptor{Name: dep.GetName(), DownloadURL: dep.GetServer()}
	if v, err := semver.ParseTolerant(dep.GetVersion()); err == nil {
		descriptor.Version = &v
	}
	if p := dep.GetParameterization(); p != nil {
		descriptor.Parameterization = &schema.ParameterizationDescriptor{Name: p.GetName(), Value: p.GetValue()}
		if v, err := semver.ParseTolerant(p.GetVersion()); err == nil {
			descriptor.Parameterization.Version = v
		}
	}
	ref, err := schema.LoadPackageReferenceV2(ctx, l.cached, descriptor)
	if err != nil {
		return nil, fmt.Errorf("loading the schema of %s: %w", dep.GetName(), err)
	}
	pkg, err := ref.Definition()
	if err != nil {
		return nil, err
	}
	if err := pkg.ImportLanguages(map[string]schema.Language{l.language: l.importer}); err != nil {
		return nil, err
	}
	return pkg, nil
}
