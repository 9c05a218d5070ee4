module github.com/saap-go/agent/files/pdf/testdata/gen

go 1.25.0

require codeberg.org/go-pdf/fpdf v0.12.0
