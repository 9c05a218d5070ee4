// Command gen writes the PDF fixtures of package files/pdf's tests:
//
//	cd files/pdf/testdata/gen && go run . ..
//
// It is its own module so that the PDF writer is no dependency of the SDK.
// The output is deterministic (fixed dates, sorted catalogue): running it
// again changes no byte.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"codeberg.org/go-pdf/fpdf"
)

func main() {
	dir := "."
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	write(filepath.Join(dir, "report.pdf"), [][]string{{
		"Quarterly report",
		"The blue heron project shipped on 3 March.",
		"Revenue grew by 17 percent.",
	}})
	write(filepath.Join(dir, "pages.pdf"), [][]string{
		{"Page one says alpha."},
		{"Page two says beta."},
		{"Page three says gamma."},
	})
}

func write(path string, pages [][]string) {
	pdf := fpdf.New("P", "mm", "A4", "")
	stamp := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	pdf.SetCreationDate(stamp)
	pdf.SetModificationDate(stamp)
	pdf.SetCatalogSort(true)
	pdf.SetCompression(true)
	pdf.SetFont("Helvetica", "", 12)
	for _, lines := range pages {
		pdf.AddPage()
		for _, l := range lines {
			pdf.Cell(0, 10, l)
			pdf.Ln(10)
		}
	}
	if err := pdf.OutputFileAndClose(path); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
