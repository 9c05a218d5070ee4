package step

// StatusCoder is an error that knows the HTTP status its run's
// ExceptionEvent should carry, e.g. 429 for a rate-limited model call.
// The engine looks for one in a failing step's error chain; without one
// the status is 500.
type StatusCoder interface {
	error
	HTTPStatus() int
}

// HTTPStatus returns the status of the first StatusCoder in err's chain
// whose status is an HTTP error status (400–599), and false if there is
// none.
func HTTPStatus(err error) (int, bool) {
	for err != nil {
		if sc, ok := err.(StatusCoder); ok {
			if n := sc.HTTPStatus(); n >= 400 && n <= 599 {
				return n, true
			}
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if n, ok := HTTPStatus(e); ok {
					return n, true
				}
			}
			return 0, false
		default:
			return 0, false
		}
	}
	return 0, false
}
