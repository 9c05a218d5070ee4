package topic_test

import (
	"errors"
	"fmt"

	"github.com/saap-go/agent/topic"
)

func ExampleAgent_Subject() {
	a := topic.Agent{
		Class: "RAGAgent", ID: "wiki",
		Thread: "66b9f0a1c2d3e4f5a6b7c8d0", Display: "66b9f0a1c2d3e4f5a6b7c8d1", Run: "66b9f0a1c2d3e4f5a6b7c8d2",
		Type: topic.Control, Name: "StartEvent", EventID: "66b9f0a1c2d3e4f5a6b7c8d3",
	}
	s, err := a.Subject()
	fmt.Println(s, err)

	// The same run, a display event:
	chunk := a.Event(topic.Display, "ChunkEvent", "66b9f0a1c2d3e4f5a6b7c8d4")
	fmt.Println(chunk)
	// Output:
	// agent.RAGAgent.wiki.66b9f0a1c2d3e4f5a6b7c8d0.66b9f0a1c2d3e4f5a6b7c8d1.66b9f0a1c2d3e4f5a6b7c8d2.control_event.StartEvent.66b9f0a1c2d3e4f5a6b7c8d3 <nil>
	// agent.RAGAgent.wiki.66b9f0a1c2d3e4f5a6b7c8d0.66b9f0a1c2d3e4f5a6b7c8d1.66b9f0a1c2d3e4f5a6b7c8d2.display_event.ChunkEvent.66b9f0a1c2d3e4f5a6b7c8d4
}

func ExampleParseAgent() {
	a, err := topic.ParseAgent("agent.MyChatAgent.dev_agent.t948.d135.r4fg.control_event.UserMessageEvent.e423")
	fmt.Println(a.Class, a.Run, a.Type, a.Name, err)

	_, err = topic.ParseAgent("agent.MyChatAgent.dev_agent.t948.d135.r4fg.control_event.UserMessageEvent")
	fmt.Println(errors.Is(err, topic.ErrGrammar))
	// Output:
	// MyChatAgent r4fg control_event UserMessageEvent <nil>
	// true
}

// A token that would corrupt the subject is rejected with its grammar
// name, the character and its position.
func ExampleTokenError() {
	_, err := topic.UserEcho("first.last", "t1", "d1", "r1", "UserMessageEvent", "e1").Subject()
	fmt.Println(err)

	var te *topic.TokenError
	if errors.As(err, &te) {
		fmt.Println(te.Token, string(te.Char), te.Pos)
	}
	// Output:
	// topic: invalid agent_id "first.last": '.' (U+002E) at byte 5: a dot separates tokens
	// agent_id . 5
}

// Wildcards come only from the pattern builders.
func ExampleClassControl() {
	s, _ := topic.ClassControl("RAGAgent")
	fmt.Println(s)
	fmt.Println(topic.StreamName("RAGAgent"), topic.StreamSubject("RAGAgent"))

	p, _ := topic.AgentPattern{Thread: "t1", Display: "d1", Type: topic.Display}.Subject()
	fmt.Println(p)
	// Output:
	// agent.RAGAgent.*.*.*.*.control_event.*.*
	// agent_RAGAgent_stream agent.RAGAgent.*.*.*.*.*.*.*
	// agent.*.*.t1.d1.*.display_event.*.*
}

func ExampleParse() {
	for _, s := range []string{
		"aihub.rpc.config.agent.RAGAgent.wiki",
		"class_discovery.agent.*.*.request.c1",
		"process.Onboarding.*.w1.work.HumanWorkEvent.e1",
	} {
		v, err := topic.Parse(s)
		fmt.Printf("%T %v\n", v, err)
	}
	// Output:
	// topic.RPC <nil>
	// topic.Discovery <nil>
	// topic.Process <nil>
}

func ExampleDiscovery_Subject() {
	req := topic.Discovery{Kind: topic.KindAgent, Class: topic.AnyClass, Dir: topic.DirRequest, CallID: "c1"}
	s, _ := req.Subject()
	fmt.Println(s)
	fmt.Println(topic.DiscoveryRequests(topic.KindAgent))
	// Output:
	// class_discovery.agent.*.*.request.c1
	// class_discovery.agent.*.*.request.*
}
