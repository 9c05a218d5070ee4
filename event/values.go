package event

import (
	"encoding/base64"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
)

// UserIdentity is the user an event acts for.
type UserIdentity struct {
	ID                 string          `json:"id" event:"required"`
	Name               string          `json:"name" event:"required"`
	Email              string          `json:"email" event:"required"`
	Roles              []string        `json:"roles" event:"required"`
	ActingWithinTenant *TenantIdentity `json:"acting_within_tenant"`
	// IsSysAdmin is written only when set: its declaration in the
	// reference is unconfirmed.
	IsSysAdmin *bool `json:"is_sys_admin,omitempty"`
}

// TenantIdentity is the tenant a user acts within.
type TenantIdentity struct {
	ID          string   `json:"id" event:"required"`
	Name        string   `json:"name" event:"required"`
	AccessRules []string `json:"access_rules" event:"required"`
}

// UserUploadedFile describes a file a user attached to a message.
type UserUploadedFile struct {
	Filename string `json:"filename" event:"required"`
	FileType string `json:"file_type" event:"required"`
	FileID   string `json:"file_id" event:"required"`
}

// ChatFeature is a feature a user requests for a message.
type ChatFeature string

// The chat features of the reference.
const (
	FeatureWebSearch       ChatFeature = "web_search"
	FeatureCodeInterpreter ChatFeature = "code_interpreter"
	FeatureImageGeneration ChatFeature = "image_generation"
)

// KnowledgeReference names a knowledge database and namespace.
type KnowledgeReference struct {
	Database  string `json:"database" event:"required"`
	Namespace string `json:"namespace" event:"required"`
}

// Topic is the reference's PartialAgentTopic / AgentInstanceTopic: where an
// answer must be sent. Unset parts are null.
type Topic struct {
	AgentClass *string `json:"agent_class"`
	AgentID    *string `json:"agent_id"`
	RunID      *string `json:"run_id"`
	ThreadID   *string `json:"thread_id"`
	DisplayID  *string `json:"display_id"`
	EventType  *string `json:"event_type"`
	EventName  *string `json:"event_name"`
	EventID    *string `json:"event_id"`
}

// Str returns a pointer to s, for the optional string fields of events.
func Str(s string) *string { return &s }

// Bytes holds inline binary data of a chat block. It reads the Python repr
// form "b'<base64>'" and plain base64, and writes the repr form.
type Bytes []byte

func (b *Bytes) decodeLax(d *decoder) error {
	if d.null() {
		*b = nil
		return nil
	}
	s, err := d.stringBytes()
	if err != nil {
		return err
	}
	t := string(s)
	if strings.HasPrefix(t, "b'") && strings.HasSuffix(t, "'") && len(t) >= 3 {
		t = t[2 : len(t)-1]
	} else if strings.HasPrefix(t, `b"`) && strings.HasSuffix(t, `"`) && len(t) >= 3 {
		t = t[2 : len(t)-1]
	}
	raw, err := base64.StdEncoding.DecodeString(t)
	if err != nil {
		raw = []byte(t) // not base64: keep the text as the data
	}
	*b = raw
	return nil
}

func (b *Bytes) encodeLax(e *encoder) error {
	if *b == nil {
		e.buf = append(e.buf, "null"...)
		return nil
	}
	e.buf = appendString(e.buf, "b'"+base64.StdEncoding.EncodeToString(*b)+"'")
	return nil
}

// ChatMessage is llama-index's ChatMessage: a role and a list
// of content blocks. Reading also accepts the legacy {"role","content"}
// form; writing always uses blocks and never content.
type ChatMessage struct {
	Role             string                     `json:"role"`
	AdditionalKwargs map[string]json.RawMessage `json:"additional_kwargs"`
	Blocks           []Block                    `json:"blocks"`
}

// Message roles of llama-index.
const (
	RoleSystem    = "system"
	RoleDeveloper = "developer"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleFunction  = "function"
	RoleTool      = "tool"
	RoleChatbot   = "chatbot"
	RoleModel     = "model"
)

// Text builds a chat message with one text block.
func Text(role, text string) ChatMessage {
	return ChatMessage{Role: role, AdditionalKwargs: map[string]json.RawMessage{}, Blocks: []Block{&TextBlock{Text: text}}}
}

// Content returns the concatenated text of the message's text blocks.
func (m ChatMessage) Content() string {
	var sb strings.Builder
	for _, b := range m.Blocks {
		if t, ok := b.(*TextBlock); ok {
			sb.WriteString(t.Text)
		}
	}
	return sb.String()
}

func (m *ChatMessage) decodeLax(d *decoder) error {
	*m = ChatMessage{}
	if d.null() {
		return nil
	}
	var content *string
	seenBlocks := false
	err := d.object(func(key []byte) error {
		switch string(key) {
		case "role":
			d.push("role")
			s, err := d.str()
			if err != nil {
				return err
			}
			d.pop()
			m.Role = s
		case "additional_kwargs":
			d.push("additional_kwargs")
			if err := mustCodec(rawMapType).dec(d, valueOfPtr(&m.AdditionalKwargs)); err != nil {
				return err
			}
			d.pop()
		case "blocks":
			seenBlocks = true
			d.push("blocks")
			if err := mustCodec(blocksType).dec(d, valueOfPtr(&m.Blocks)); err != nil {
				return err
			}
			d.pop()
		case "content":
			if d.peek() == '"' {
				s, err := d.str()
				if err != nil {
					return err
				}
				content = &s
				return nil
			}
			_, err := d.skip()
			return err
		default:
			_, err := d.skip()
			return err
		}
		return nil
	})
	if err != nil {
		return err
	}
	if m.AdditionalKwargs == nil {
		m.AdditionalKwargs = map[string]json.RawMessage{}
	}
	if !seenBlocks || m.Blocks == nil {
		m.Blocks = []Block{}
		if content != nil {
			m.Blocks = append(m.Blocks, &TextBlock{Text: *content})
		}
	}
	return nil
}

func (m *ChatMessage) encodeLax(e *encoder) error {
	e.buf = append(e.buf, `{"role": `...)
	role := m.Role
	if role == "" {
		role = RoleUser // llama-index's default role
	}
	e.buf = appendString(e.buf, role)
	e.buf = append(e.buf, `, "additional_kwargs": `...)
	if m.AdditionalKwargs == nil {
		e.buf = append(e.buf, "{}"...)
	} else if err := mustCodec(rawMapType).enc(e, valueOfPtr(&m.AdditionalKwargs)); err != nil {
		return err
	}
	e.buf = append(e.buf, `, "blocks": `...)
	if m.Blocks == nil {
		e.buf = append(e.buf, "[]"...)
	} else if err := mustCodec(blocksType).enc(e, valueOfPtr(&m.Blocks)); err != nil {
		return err
	}
	e.buf = append(e.buf, '}')
	return nil
}

var (
	reFilename = regexp.MustCompile(`^[^/\\]+$`)
	reFileID   = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
)

var roles = []string{RoleSystem, RoleDeveloper, RoleUser, RoleAssistant, RoleFunction, RoleTool, RoleChatbot, RoleModel}

// validate checks the role: llama-index accepts only its roles ("" is
// written as "user", its default).
func (m ChatMessage) validate() error {
	if m.Role != "" && !slices.Contains(roles, m.Role) {
		return &ValidationError{Field: "role", Hint: "must be one of " + joinQuoted(roles) + ", got " + quote(m.Role)}
	}
	return nil
}

func (f UserUploadedFile) validate() error {
	if !reFilename.MatchString(f.Filename) {
		return &ValidationError{Field: "filename", Hint: "must be a file name without / or \\, got " + quote(f.Filename)}
	}
	if !reFileID.MatchString(f.FileID) {
		return &ValidationError{Field: "file_id", Hint: "must be a lowercase UUID4, got " + quote(f.FileID)}
	}
	return nil
}
