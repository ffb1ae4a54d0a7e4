// coredns is CoreDNS with only the plugins the e2e node's cluster DNS uses: Services' names from the
// API server (kubernetes), an answer of NXDOMAIN for every other name (template: nothing outside is
// ever asked), and bind, ready, errors, log, cache. Upstream's main links every plugin of its
// plugin.cfg (route53, azure, clouddns, etcd, ...); the directives below are those plugins in
// plugin.cfg's order, which is the order CoreDNS chains them in.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/template"
)

func init() {
	dnsserver.Directives = []string{"bind", "ready", "errors", "log", "cache", "template", "kubernetes"}
}

func main() {
	coremain.Run()
}
