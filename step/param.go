package step

import (
	"reflect"
	"strconv"
	"strings"

	"github.com/saap-go/agent/event"
)

// Maybe marks an optional input: a step typed with Maybe[*A] runs without an
// A and sees OK == false. Maybe[[]*A] binds every A present, possibly none,
// and never blocks the step. Maybe[Either[*A, *B]] is an optional union.
type Maybe[T any] struct {
	Value T
	OK    bool // an event was bound
}

func (Maybe[T]) isMaybe() {}

// Either is a union input (or result): exactly one of A and B is non-nil. As
// an input the step fires on either type; as a result, the non-nil one is
// published.
type Either[A, B event.Event] struct {
	A A
	B B
}

// Event returns whichever member is set, or nil.
func (e Either[A, B]) Event() event.Event {
	if !isNil(e.A) {
		return e.A
	}
	if !isNil(e.B) {
		return e.B
	}
	return nil
}

func (Either[A, B]) isEither() {}

// Either3 is a union of three event types; see Either.
type Either3[A, B, C event.Event] struct {
	A A
	B B
	C C
}

// Event returns whichever member is set, or nil.
func (e Either3[A, B, C]) Event() event.Event {
	if !isNil(e.A) {
		return e.A
	}
	if !isNil(e.B) {
		return e.B
	}
	if !isNil(e.C) {
		return e.C
	}
	return nil
}

func (Either3[A, B, C]) isEither() {}

// OneOf returns the Either holding its first member a; Other the one
// holding its second member b. They make a union result read well:
//
//	if found == nil {
//		return step.Other[*Found](&NotFound{}), nil
//	}
//	return step.OneOf[*Found, *NotFound](found), nil
func OneOf[A, B event.Event](a A) Either[A, B] { return Either[A, B]{A: a} }

// Other returns the Either holding its second member b; see OneOf.
func Other[A, B event.Event](b B) Either[A, B] { return Either[A, B]{B: b} }

type maybeMarker interface{ isMaybe() }
type eitherMarker interface{ isEither() }

var (
	maybeIface  = reflect.TypeFor[maybeMarker]()
	eitherIface = reflect.TypeFor[eitherMarker]()
)

// isNil reports whether an event interface holds nothing or a nil pointer.
func isNil(e event.Event) bool {
	if e == nil {
		return true
	}
	v := reflect.ValueOf(e)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// Kind is how a parameter binds events.
type Kind int

// The parameter kinds.
const (
	Single       Kind = iota // one event, required: the trigger if it matches, else the latest
	Optional                 // one event or none; never blocks
	List                     // every matching event in arrival order; at least one
	OptionalList             // every matching event, possibly none; never blocks
	Fixed                    // exactly Size events
)

var kindNames = [...]string{"Single", "Optional", "List", "OptionalList", "Fixed"}

// String returns the kind's name.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Required reports whether the kind blocks the step until enough events
// exist.
func (k Kind) Required() bool { return k == Single || k == List || k == Fixed }

// Param describes one event parameter of a step or a precondition.
type Param struct {
	Kind  Kind
	Names []string // wire names of the accepted event types, in declaration order
	Size  int      // the exact count, for Fixed
	Name  string   // position label for messages: "arg1" is the first event parameter
}

// Accepts reports whether name is one of the parameter's event types.
func (p Param) Accepts(name string) bool {
	for _, n := range p.Names {
		if n == name {
			return true
		}
	}
	return false
}

// typeString renders the accepted types as "A | B".
func (p Param) typeString() string { return strings.Join(p.Names, " | ") }
