package event

import "strings"

// LocaleString is a text in the platform's four locales. Every key is
// always written; an empty locale is written as null.
type LocaleString struct {
	De string
	En string
	Fr string
	It string

	empty uint8 // locales received as "" rather than null, to write them back
}

// L builds a LocaleString from the four texts in the order de, en, fr, it.
func L(de, en, fr, it string) LocaleString { return LocaleString{De: de, En: en, Fr: fr, It: it} }

// Get returns the text for a locale ("de", "en", "fr", "it"), as the
// reference's LocaleHandler picks it: the locale's text, else German (the
// platform's default locale), else the first text present in the order
// de, en, fr, it; "" if all four are empty. An unknown locale counts as
// German.
func (l LocaleString) Get(locale string) string {
	var s string
	switch strings.ToLower(locale) {
	case "en":
		s = l.En
	case "fr":
		s = l.Fr
	case "it":
		s = l.It
	}
	for _, t := range [...]string{s, l.De, l.En, l.Fr, l.It} {
		if t != "" {
			return t
		}
	}
	return ""
}

// Empty reports whether l has no text in any locale.
func (l LocaleString) Empty() bool { return l.De == "" && l.En == "" && l.Fr == "" && l.It == "" }

// Ptr returns a pointer to a copy of l, for the optional display fields.
func (l LocaleString) Ptr() *LocaleString { return &l }

func (l *LocaleString) slot(key string) (*string, uint8) {
	switch key {
	case "de":
		return &l.De, 1
	case "en":
		return &l.En, 2
	case "fr":
		return &l.Fr, 4
	case "it":
		return &l.It, 8
	}
	return nil, 0
}

// localeKeys are the path entries of the four locales, so that pushing one
// copies no key.
var localeKeys = [...]string{1: "de", 2: "en", 4: "fr", 8: "it"}

func (l *LocaleString) decodeLax(d *decoder) error { return l.decodeLike(d, nil) }

// decodeLike decodes l; a text equal to like's text in the same locale
// shares like's string instead of allocating (like may be nil).
func (l *LocaleString) decodeLike(d *decoder, like *LocaleString) error {
	*l = LocaleString{}
	if d.null() {
		return nil
	}
	if err := d.objBegin(); err != nil {
		return err
	}
	for n := 0; ; n++ {
		key, more, err := d.objNext(n)
		if err != nil || !more {
			return err
		}
		p, bit := l.slot(string(key))
		if p == nil { // the reference drops unknown keys
			if _, err := d.skip(); err != nil {
				return err
			}
			continue
		}
		if d.null() {
			continue
		}
		d.push(localeKeys[bit])
		var s string
		if like != nil {
			lp, _ := like.slot(localeKeys[bit])
			s, err = d.strAs(*lp)
		} else {
			s, err = d.str()
		}
		if err != nil {
			return err
		}
		d.pop()
		*p = s
		if s == "" {
			l.empty |= bit
		}
	}
}

func (l *LocaleString) encodeLax(e *encoder) error {
	e.buf = append(e.buf, '{')
	for i, k := range [4]string{"de", "en", "fr", "it"} {
		if i > 0 {
			e.buf = append(e.buf, ", "...)
		}
		e.buf = append(e.buf, '"')
		e.buf = append(e.buf, k...)
		e.buf = append(e.buf, `": `...)
		p, bit := l.slot(k)
		if *p == "" && l.empty&bit == 0 {
			e.buf = append(e.buf, "null"...)
		} else {
			e.buf = appendString(e.buf, *p)
		}
	}
	e.buf = append(e.buf, '}')
	return nil
}

// MarshalJSON writes l in its wire form, as events carry it:
// {"de", "en", "fr", "it"}, a locale without a text as null. It lets
// encoding/json users (configurations, templates, profiles) write the
// same shape the event codec writes.
func (l LocaleString) MarshalJSON() ([]byte, error) {
	e := encoder{}
	if err := l.encodeLax(&e); err != nil {
		return nil, err
	}
	return e.buf, nil
}

// UnmarshalJSON reads the wire form as the event codec does: unknown keys
// are dropped, a null locale or a null object is empty.
func (l *LocaleString) UnmarshalJSON(data []byte) error {
	d := decoder{data: validUTF8(data)}
	if err := l.decodeLax(&d); err != nil {
		return err
	}
	return d.end()
}
