package bus

import (
	"fmt"
	"time"

	"github.com/saap-go/agent/topic"
)

// Reference stream settings.
const (
	AgentStreamMaxMsgs    = 10_000_000
	AgentStreamMaxAge     = 30 * 24 * time.Hour
	AgentStreamDuplicates = 60 * time.Second
)

// AgentStream returns the stream of an agent class exactly as the reference
// creates it: agent_<Class>_stream bound to agent.<Class>.*.*.*.*.*.*.*,
// file storage, limits retention, 10,000,000 messages, discard old, 30 days,
// 60 s duplicate window. An invalid class makes Validate (and so
// EnsureStream) fail with the class's *topic.TokenError.
func AgentStream(class string) StreamConfig {
	return StreamConfig{
		Name:       topic.StreamName(class),
		Subjects:   []string{topic.StreamSubject(class)},
		Storage:    FileStorage,
		MaxMsgs:    AgentStreamMaxMsgs,
		MaxAge:     AgentStreamMaxAge,
		Duplicates: AgentStreamDuplicates,
		err:        topic.ValidateToken("agent_class", class),
	}
}

// RunnerConsumer returns the durable consumer shared by all runners of an
// agent class: agent_runner_<Class> over the class's control events, AckWait
// 30 s, MaxDeliver 5. An invalid class makes Validate
// (and so Consume) fail with the class's *topic.TokenError.
func RunnerConsumer(class string) ConsumerConfig {
	// On error the filter stays empty, but Validate refuses the config, so
	// the empty filter never widens a consumer to the whole stream.
	filter, err := topic.ClassControl(class)
	return ConsumerConfig{
		Stream:        topic.StreamName(class),
		Durable:       "agent_runner_" + class,
		FilterSubject: filter,
		AckWait:       DefaultAckWait,
		MaxDeliver:    DefaultMaxDeliver,
		err:           err,
	}
}

// Validate reports a stream config that no server would accept.
func (c StreamConfig) Validate() error {
	if c.err != nil {
		return fmt.Errorf("bus: stream of agent class: %w", c.err)
	}
	if err := validateName("stream", c.Name); err != nil {
		return err
	}
	if len(c.Subjects) == 0 {
		return fmt.Errorf("bus: stream %q has no subjects", c.Name)
	}
	for _, s := range c.Subjects {
		if err := ValidatePattern(s); err != nil {
			return fmt.Errorf("stream %q: %w", c.Name, err)
		}
	}
	return nil
}

// Validate reports a consumer config that no server would accept.
func (c ConsumerConfig) Validate() error {
	if c.err != nil {
		return fmt.Errorf("bus: runner consumer of agent class: %w", c.err)
	}
	if err := validateName("stream", c.Stream); err != nil {
		return err
	}
	if err := validateName("durable", c.Durable); err != nil {
		return err
	}
	if c.FilterSubject != "" {
		if err := ValidatePattern(c.FilterSubject); err != nil {
			return fmt.Errorf("consumer %q filter: %w", c.Durable, err)
		}
	}
	return nil
}

// MaxNameLen is JetStream's limit on the length of stream and consumer
// names, in bytes. An agent class longer than about 240 bytes makes names
// over it.
const MaxNameLen = 255

// validateName applies JetStream's rules for stream and consumer names.
func validateName(kind, name string) error {
	if name == "" {
		return fmt.Errorf("bus: empty %s name", kind)
	}
	if len(name) > MaxNameLen {
		return fmt.Errorf("bus: %s name of %d bytes is over JetStream's limit of %d bytes", kind, len(name), MaxNameLen)
	}
	for _, r := range name {
		if r <= ' ' || r == '.' || r == '*' || r == '>' || r == '/' || r == '\\' || r == 0x7f {
			return fmt.Errorf("bus: %s name %q holds %q, not allowed in JetStream names", kind, name, r)
		}
	}
	return nil
}
