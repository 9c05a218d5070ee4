package event

// The library registers in dependency order: a type's parents first.
func init() {
	registerCore()
	registerSemantic()
	registerCatalogue()
}
