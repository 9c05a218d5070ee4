// Command natsd is a nats-server with JetStream for the fault suite: a
// separate process the tests can SIGKILL and start again on the same port
// and store directory, so that no system nats-server binary is needed.
//
// With -cluster_port and -routes it is one node of a cluster: its peers
// are the routes, and JetStream replicates streams across the nodes, each
// of which needs its own -name and -dir.
//
// It prints one line "NATSD_READY <client URL> <monitoring URL>" once it
// accepts clients, and shuts down on SIGTERM or SIGINT.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

func main() {
	port := flag.Int("port", -1, "client port on 127.0.0.1 (-1: a free one)")
	httpPort := flag.Int("http_port", -1, "monitoring port on 127.0.0.1 (-1: a free one)")
	dir := flag.String("dir", "", "JetStream store directory (required)")
	conf := flag.String("config", "", "server configuration file (accounts, users, permissions)")
	maxPayload := flag.Int("max_payload", 0, "max payload in bytes (0: server default)")
	maxControlLine := flag.Int("max_control_line", 0, "max protocol control line in bytes (0: server default)")
	logs := flag.Bool("log", false, "write the server's log to stderr")
	name := flag.String("name", "faults-natsd", "server name, unique in a cluster")
	clusterName := flag.String("cluster", "faults", "cluster name, with -cluster_port")
	clusterPort := flag.Int("cluster_port", 0, "route port on 127.0.0.1 (0: not clustered)")
	routes := flag.String("routes", "", "comma-separated route URLs of the cluster's nodes (nats-route://host:port)")
	flag.Parse()
	cl := cluster{name: *clusterName, port: *clusterPort, routes: *routes}
	if err := run(*name, *port, *httpPort, *dir, *conf, *maxPayload, *maxControlLine, *logs, cl); err != nil {
		fmt.Fprintln(os.Stderr, "natsd:", err)
		os.Exit(1)
	}
}

// cluster is the node's place in a cluster; port 0 means none.
type cluster struct {
	name   string
	port   int
	routes string
}

func run(name string, port, httpPort int, dir, conf string, maxPayload, maxControlLine int, logs bool, cl cluster) error {
	if dir == "" {
		return fmt.Errorf("-dir is required")
	}
	opts := &server.Options{}
	if conf != "" {
		var err error
		if opts, err = server.ProcessConfigFile(conf); err != nil {
			return fmt.Errorf("config %s: %w", conf, err)
		}
	}
	opts.ServerName = name
	if cl.port != 0 {
		opts.Cluster.Name = cl.name
		opts.Cluster.Host, opts.Cluster.Port = "127.0.0.1", cl.port
		opts.Routes = server.RoutesFromStr(cl.routes)
		if len(opts.Routes) == 0 {
			return fmt.Errorf("-cluster_port needs -routes")
		}
	}
	opts.Host, opts.Port = "127.0.0.1", port
	opts.HTTPHost, opts.HTTPPort = "127.0.0.1", httpPort
	opts.JetStream, opts.StoreDir = true, dir
	opts.NoSigs = true
	opts.NoLog = !logs
	opts.DisableShortFirstPing = true
	if maxPayload > 0 {
		opts.MaxPayload = int32(maxPayload)
	}
	if maxControlLine > 0 {
		opts.MaxControlLine = int32(maxControlLine)
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return err
	}
	if logs {
		srv.ConfigureLogger()
	}
	srv.Start()
	if !srv.ReadyForConnections(30 * time.Second) {
		srv.Shutdown()
		return fmt.Errorf("not ready for connections within 30s")
	}
	fmt.Printf("NATSD_READY %s http://%s\n", srv.ClientURL(), srv.MonitorAddr())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	<-sig
	srv.Shutdown()
	srv.WaitForShutdown()
	return nil
}
