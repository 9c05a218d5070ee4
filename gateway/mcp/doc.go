// Package mcp connects agents and the Model Context Protocol, through the
// official Go SDK (github.com/modelcontextprotocol/go-sdk).
//
// Server: the agent classes a gateway serves become MCP tools, over
// streamable HTTP (Mount: /mcp and /api/v1/{tenant}/mcp, /mcp/{agent_id}
// to address another agent id) or stdio (ServeStdio). tools/list has one
// tool per start event of each class, named after the class (and
// "<Class>.<Event>" for further start events), whose input schema is the
// start event's without the fields the gateway fills; a conversational
// class takes the user's text as "message". tools/call starts a run as the
// caller and answers with the run's text; an ExceptionEvent is a result
// with isError. ChunkEvents are sent as progress notifications when the
// call asks for progress. A HITL question becomes an elicitation when the
// client declares the capability (elicitation/create, or an input request
// of the multi-round-trip protocol, as the SDK negotiates); the answer
// enters the run with the gateway's checks, and the call goes on to the
// run's end. Without elicitation the result is the question, with its id
// and thread in structuredContent.
//
// Every HTTP request passes the gateway's guard; a session belongs to the
// user who opened it (another user's requests for it get 404), and its
// calls act as that user, in threads of their own.
//
// Client: Connect (or Tools) connects to an MCP server, a command over
// stdio or a streamable HTTP URL, and returns its tools as llm.Callable
// for the llm tool loop.
package mcp
