package event

// libraryTexts returns the default display texts of a library event.
func libraryTexts(name string) (LocaleString, LocaleString, bool) {
	t, ok := texts[name]
	return t[0], t[1], ok
}

var texts = map[string][2]LocaleString{}
