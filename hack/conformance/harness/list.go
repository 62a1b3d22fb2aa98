package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"

	"github.com/onsi/ginkgo/v2/types"
)

// The list, hack/conformance/tests.txt: one test a line, by the full name
// `e2e.test --list-tests` prints; "# " lines are comments; a line "- NAME" is a test left
// out, the comment lines above it saying why.

type list struct {
	tests    []string
	excluded []string
}

func readList(path, match string) (*list, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var re *regexp.Regexp
	if match != "" {
		if re, err = regexp.Compile(match); err != nil {
			return nil, fmt.Errorf("--match: %w", err)
		}
	}
	l := &list{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := strings.TrimSpace(s.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "- "):
			l.excluded = append(l.excluded, strings.TrimPrefix(line, "- "))
		default:
			if re == nil || re.MatchString(line) {
				l.tests = append(l.tests, line)
			}
		}
	}
	return l, s.Err()
}

// focusCmd prints the ginkgo --focus that selects exactly the listed tests.
func focusCmd(args []string) error {
	var tests, match string
	if err := flags("focus", args, func(fs *flag.FlagSet) {
		fs.StringVar(&tests, "tests", "", "the list")
		fs.StringVar(&match, "match", "", "only the listed tests matching this")
	}); err != nil {
		return err
	}
	l, err := readList(tests, match)
	if err != nil {
		return err
	}
	if len(l.tests) == 0 {
		return nil
	}
	quoted := make([]string, len(l.tests))
	for i, t := range l.tests {
		quoted[i] = regexp.QuoteMeta(t)
	}
	// Ginkgo matches --focus against the suite's description, a space, and the spec's text.
	fmt.Printf("^Kubernetes e2e suite (%s)$", strings.Join(quoted, "|"))
	return nil
}

// reportCmd reads ginkgo's JSON report and prints each listed test that did not pass, then
// "conformance: P passed, F failed", where a listed test that was skipped, pending or not
// run at all counts as failed.
func reportCmd(args []string) error {
	var tests, match, reportFile string
	if err := flags("report", args, func(fs *flag.FlagSet) {
		fs.StringVar(&tests, "tests", "", "the list")
		fs.StringVar(&match, "match", "", "only the listed tests matching this")
		fs.StringVar(&reportFile, "report", "", "ginkgo's --json-report")
	}); err != nil {
		return err
	}
	l, err := readList(tests, match)
	if err != nil {
		return err
	}
	states := map[string]string{}
	if data, err := os.ReadFile(reportFile); err == nil {
		var reports []types.Report
		if err := json.Unmarshal(data, &reports); err != nil {
			return fmt.Errorf("reading %s: %w", reportFile, err)
		}
		for _, r := range reports {
			for _, s := range r.SpecReports {
				if s.LeafNodeType == types.NodeTypeIt {
					states[s.FullText()] = s.State.String()
				}
			}
		}
	} else {
		fmt.Fprintf(os.Stderr, "conformance: no report (%v): the suite did not run\n", err)
	}
	passed, failed := 0, 0
	var bad []string
	for _, t := range l.tests {
		st, ok := states[t]
		switch {
		case st == "passed":
			passed++
			continue
		case !ok:
			st = "not run"
		}
		failed++
		bad = append(bad, fmt.Sprintf("  %s: %s", st, t))
	}
	sort.Strings(bad)
	for _, b := range bad {
		fmt.Println(b)
	}
	fmt.Printf("conformance: %d passed, %d failed\n", passed, failed)
	return nil
}
