package event

// library holds the types this package registers itself, the event
// catalogue of the reference, sorted by name.
var library []*Type

// The library registers in dependency order: a type's parents first.
func init() {
	registerCore()
	registerSemantic()
	registerCatalogue()
	registerLifecycle()
	registerCancel()
	registerTimers()
	library = Types()
}
