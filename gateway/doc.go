// Package gateway is an HTTP gateway for agents of the Swiss AI Agent
// Protocol: it turns REST and OpenAI-style requests into protocol events on
// NATS and streams the agents' answers back, as the reference platform's API
// gateway does.
//
// A Gateway is an http.Handler. It learns which agent classes exist by
// discovery: every DiscoveryPeriod it publishes a ClassDiscoveryRequestEvent
// and collects the classes' answers for DiscoveryWindow (Run or
// ListenAndServe do this; Discover runs one cycle on demand). Run and
// ListenAndServe also serve a class as soon as its agent announces itself
// at start (its discovery answer, published unsolicited on
// class_discovery.agent.<Class>.*.announce.<event_id>), so a new agent is
// reachable at once rather than after the next cycle. Every event
// the gateway receives or sends, discovery answers included, passes the
// event codec: a Class holds its answer as an
// event.AgentClassDiscoveryResponseEvent. For every start
// event and HITL response event of a discovered class it serves
//
//	POST /api/v1/{tenant}/agents/classes/{Class}/instances/{id}/{Event}[/stream]
//	POST /agents/{Class}/{id}/{Event}[/stream]
//
// The body is the event without its framework fields: the gateway adds
// event_id, created_at, the authenticated user and the locale, publishes the
// event to the agent's control subject with JetStream (after echoing a
// user's display event on the UserAgent subject), and answers
//
//   - on /stream: Server-Sent Events, one `data: <event JSON>` per display
//     event of the thread and display, `data: [DONE]` after the terminal
//     event, and keep-alive comments meanwhile;
//   - otherwise: the terminal event as JSON; an ExceptionEvent becomes an
//     error with its http_status_code.
//
// The terminal event is a stop of the addressed agent's run, or an
// exception or HITL request of any agent in the thread.
// Unlike the reference, every wait is bounded by Config.Timeout.
//
// Thread and display ids come from the query (thread_id, display_id; 24
// lower-case hex characters) or are new; the response headers X-Thread-Id,
// X-Display-Id and X-Run-Id tell the client which were used. A user may
// only address and stream threads they are a member of (Threads; a new
// thread gets its creator as member).
//
// A HITL answer names its question by request_event.event_id. The gateway
// accepts it only for a question it saw the agent ask in that thread (while
// following the thread, or through the watch Run keeps on the discovered
// classes' HITL requests), from a member of the thread, while the question
// is open and its run has not ended; it then routes the answer by the
// recorded topic and embeds the recorded request, whatever the client's
// copy says. An unknown question and one of another thread or run get the
// same 404; a closed one 409: answered, timed out (the watch sees the
// runtime's wait timeout events) or of a run that ended with a stop or an
// exception. Threads and questions live in a Threads and
// Questions store: in memory by default, or shared through a JetStream
// key-value bucket (NewKVStore), so restarts and replicas keep ownership.
//
// The chat flow: while a thread has an open input or chat question, the
// next user message sent to the thread, through a conversational start
// endpoint or the chat completions endpoint, becomes the answer (its
// Input or Chat response event, in the asking run), as in the reference's
// chat. The store finds the thread's question on any replica.
//
// Bot-in-the-loop: the watch also records the BotInTheLoopRequestEvents of
// the discovered classes and hands each, on one replica, to Config.Bot
// (hitl.Webhook posts it, signed, to a URL). The bot posts its answer, a
// hitl.WebhookAnswer signed with Config.BotSecret as hitl.Sign describes,
// to
//
//	POST /api/v1/bitl/answers
//
// A missing or wrong signature, a timestamp outside the replay window and
// a replayed message get 401; then the same open-question checks as a
// human's answer apply (404, 409), and the answer enters the run as a
// BotInTheLoopResponseEvent (202).
//
// Requests that start runs or answer questions are limited per user (a
// token bucket, RateLimit and RateBurst, and MaxRunsPerUser open at once;
// 429 with Retry-After beyond), and the bodies read at once by
// MaxInFlightBody. X-AIHub-* request headers reach agents only when named
// in ForwardHeaders; X-AIHub-User-Id is always the authenticated user.
// NewServer (used by ListenAndServe) sets read, write and idle timeouts
// (a short one for connections that have carried no authenticated request),
// a connection cap that a new connection may pass only by taking such an
// idle connection's place, and a cap per client address; streams extend
// their write deadline per event.
// Thread history: with Config.History (NewJetStreamHistory keeps it on
// the agents' NATS server) the gateway records each thread's messages,
// the user's as it publishes them and the agents' answers as it follows
// the runs, fills a start event whose messages list is empty from it (as
// the reference's distributor does), puts it before the sent messages when
// a request asks for reconstruct_history, and serves it to the thread's
// members, paged, at
//
//	GET /api/v1/saap/threads/{thread}/messages?after=<cursor>&limit=N
//
// GET /api/v1/health answers 503 while the NATS connection is down or
// JetStream is unavailable or out of storage, naming the reason.
//
// POST /v1/chat/completions (and /api/v1/{tenant}/openai/chat/completions)
// is OpenAI-compatible: model "<AgentClass>/<agent_id>", or the class
// alone as GET /v1/models lists it (Config.DefaultAgentID, "default");
// streaming chunks made from ChunkEvents, a final chunk with
// finish_reason, then `data: [DONE]`; or a non-streaming ChatCompletion.
// metadata.thread_id and metadata.display_id continue a conversation; a
// HITL question asked in a thread is answered by the next message there.
// Every chunk and the final object carry the requested model; usage sums
// the run's LLMCostEvents, else the token counts of its LLM events (an
// LLMStopEvent carries its call's), null when it reported none. tools,
// functions and n other than 1 get a 400 naming the parameter: the agent
// runs its own tools and answers once. GET /v1/models (and
// /v1/models/{model}) lists the conversational classes served. Errors of
// these endpoints have OpenAI's shape, {"error":{"message","type","param",
// "code"}}, so OpenAI clients show them. image_url parts pass on as
// images (a data: URL as the image's bytes); file parts name uploads.
//
// With Config.Files set, users upload files (POST /api/v1/saap/files,
// multipart; size, sniffed type and an optional Scanner checked) and put
// the UserUploadedFile reference it answers into a message's files; only
// the uploader and the members of the file's thread may read a file or
// send a message naming it. Package files reads the files in a step.
//
// Users come from a pluggable Authenticator (StaticTokens, TokenFunc, or
// Anonymous for local development, which ListenAndServe serves only on
// loopback addresses unless Config.AllowAnonymousRemote is set).
//
// The command gateway/cmd/saap-gateway serves a Gateway for the agents on
// the NATS server named by NATS_URL; examples/chat embeds one next to an
// agent in a single binary.
package gateway
