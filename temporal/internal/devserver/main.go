// Command devserver runs a Temporal development server for robby's tests. It
// runs every service in one process, with SQLite persistence (in memory unless
// -db is given). It registers the "default" namespace at start, and has no web
// UI.
//
// It is built from go.temporal.io/server as the Temporal CLI's "server
// start-dev" is. The CLI cannot be installed from the Go module proxy, and tests
// must not download anything. It lives in a module of its own, outside go.work.
// The server's many dependencies so never touch robby's modules.
//
// It prints "ready HOST:PORT" on standard output once the frontend accepts
// connections, and stops on SIGINT or SIGTERM.
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/membership/static"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/primitives"
	sqliteschema "go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/temporal"
)

const clusterName = "active"

func main() {
	ip := flag.String("ip", "127.0.0.1", "IP address the services bind to")
	port := flag.Int("port", 7233, "frontend gRPC port (0 picks a free one)")
	db := flag.String("db", "", "SQLite database file (default: in memory)")
	ns := flag.String("namespace", "default", "namespace registered at start")
	level := flag.String("log-level", "error", "server log level (debug, info, warn, error)")
	flag.Parse()
	if err := run(*ip, *port, *db, *ns, *level); err != nil {
		fmt.Fprintln(os.Stderr, "devserver:", err)
		os.Exit(1)
	}
}

func run(ip string, port int, db, ns, level string) error {
	ports, err := freePorts(ip, 5)
	if err != nil {
		return err
	}
	if port == 0 {
		port = ports[4]
	}
	sqlConf, err := sqlConfig(db, ns)
	if err != nil {
		return err
	}
	conf := serverConfig(ip, port, ports, sqlConf)
	logger := log.NewZapLogger(log.BuildZapLogger(log.Config{Level: level}))
	authorizer, err := authorization.GetAuthorizerFromConfig(&conf.Global.Authorization)
	if err != nil {
		return err
	}
	claims, err := authorization.GetClaimMapperFromConfig(&conf.Global.Authorization, logger)
	if err != nil {
		return err
	}
	hosts := map[primitives.ServiceName]static.Hosts{}
	for _, s := range []primitives.ServiceName{primitives.FrontendService, primitives.MatchingService,
		primitives.HistoryService, primitives.WorkerService} {
		hosts[s] = static.SingleLocalHost(net.JoinHostPort(ip, strconv.Itoa(conf.Services[string(s)].RPC.GRPCPort)))
	}
	dyn := dynamicconfig.StaticClient{
		dynamicconfig.HistoryCacheHostLevelMaxSize.Key():                 8096,
		dynamicconfig.FrontendMaxNamespaceVisibilityRPSPerInstance.Key(): 100,
	}
	srv, err := temporal.NewServer(
		temporal.WithConfig(conf),
		temporal.ForServices(temporal.DefaultServices),
		temporal.WithStaticHosts(hosts),
		temporal.WithLogger(logger),
		temporal.WithAuthorizer(authorizer),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper { return claims }),
		temporal.WithDynamicConfigClient(dyn),
	)
	if err != nil {
		return err
	}
	if err := srv.Start(); err != nil {
		return err
	}
	fmt.Printf("ready %s\n", net.JoinHostPort(ip, strconv.Itoa(port)))
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	return srv.Stop()
}

func serverConfig(ip string, port int, ports []int, sqlConf *config.SQL) *config.Config {
	var conf config.Config
	conf.Global.Membership.MaxJoinDuration = 30 * time.Second
	conf.Global.Membership.BroadcastAddress = ip
	conf.Persistence.DefaultStore = "sqlite-default"
	conf.Persistence.VisibilityStore = "sqlite-default"
	conf.Persistence.NumHistoryShards = 1
	conf.Persistence.DataStores = map[string]config.DataStore{"sqlite-default": {SQL: sqlConf}}
	addr := func(p int) string { return net.JoinHostPort(ip, strconv.Itoa(p)) }
	conf.ClusterMetadata = &cluster.Config{
		FailoverVersionIncrement: 10,
		MasterClusterName:        clusterName,
		CurrentClusterName:       clusterName,
		ClusterInformation: map[string]cluster.ClusterInformation{clusterName: {
			Enabled:                true,
			InitialFailoverVersion: 1,
			RPCAddress:             addr(port),
			HTTPAddress:            addr(ports[0]),
			ClusterID:              "robby-dev",
		}},
	}
	conf.DCRedirectionPolicy.Policy = "noop"
	service := func(grpc, http int) config.Service {
		var s config.Service
		s.RPC.GRPCPort, s.RPC.HTTPPort, s.RPC.BindOnIP = grpc, http, ip
		return s
	}
	conf.Services = map[string]config.Service{
		"frontend": service(port, ports[0]),
		"history":  service(ports[1], 0),
		"matching": service(ports[2], 0),
		"worker":   service(ports[3], 0),
	}
	conf.Archival.History.State = "disabled"
	conf.Archival.Visibility.State = "disabled"
	conf.NamespaceDefaults.Archival.History.State = "disabled"
	conf.NamespaceDefaults.Archival.Visibility.State = "disabled"
	conf.PublicClient.HostPort = addr(port)
	return &conf
}

// sqlConfig sets up the SQLite store and registers the namespace in it.
func sqlConfig(db, ns string) (*config.SQL, error) {
	conf := config.SQL{PluginName: sqliteplugin.PluginName}
	if db == "" {
		conf.ConnectAttributes = map[string]string{"mode": "memory", "cache": "shared"}
		conf.DatabaseName = strconv.Itoa(rand.IntN(9999999))
	} else {
		conf.ConnectAttributes = map[string]string{"mode": "rwc"}
		conf.DatabaseName = db
		if _, err := os.Stat(db); os.IsNotExist(err) {
			if err := sqliteschema.SetupSchema(&conf); err != nil {
				return nil, fmt.Errorf("set up schema: %w", err)
			}
		}
	}
	nsConf, err := sqliteschema.NewNamespaceConfig(clusterName, ns, false, nil)
	if err != nil {
		return nil, err
	}
	if err := sqliteschema.CreateNamespaces(&conf, nsConf); err != nil {
		return nil, fmt.Errorf("create namespace %q: %w", ns, err)
	}
	return &conf, nil
}

// freePorts reserves n distinct free ports by holding listeners open together.
func freePorts(ip string, n int) ([]int, error) {
	ports := make([]int, n)
	for i := range ports {
		l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
		if err != nil {
			return nil, fmt.Errorf("free port: %w", err)
		}
		defer l.Close()
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports, nil
}
