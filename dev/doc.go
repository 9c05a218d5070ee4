// Package dev runs agents for development: in one call it starts an
// embedded NATS server (or joins NATS_URL), runs every agent given on it,
// and serves the HTTP gateway and the dev console for them on one local
// address. At start it prints the console's URL, the NATS URL (for the
// saap command) and a curl line that talks to the first agent:
//
//	func main() {
//		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
//		defer stop()
//		if err := dev.Run(ctx, ":8080", &ChatAgent{}, &Summarizer{}); err != nil {
//			log.Fatal(err)
//		}
//	}
//
// The gateway lets everyone in as one development user, so dev mode only
// listens on loopback addresses. Runs use the agents' default
// configuration (agent.Standalone).
//
// Besides the gateway's routes, the server answers
//
//	GET /dev/                   the console (HTML, no external resources)
//	GET /dev/api/info           the NATS URL and the classes run here
//	GET /dev/api/classes        the discovered classes' discovery answers, as JSON
//	GET /dev/api/events         every agent event on the bus, as Server-Sent Events
//	GET /dev/api/runs/{run}     the stored events of a run, as JSON
package dev
