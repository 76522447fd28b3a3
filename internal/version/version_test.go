package version

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"testing"

	"golang.org/x/mod/modfile"
)

// releaseHeading is a release section's heading in CHANGELOG.md (Keep a
// Changelog 1.1.0): "## [X.Y.Z] - YYYY-MM-DD".
var releaseHeading = regexp.MustCompile(`(?m)^## \[([^\]]+)\] - (\S+)$`)

// latestRelease returns the version and date of the first release section
// of a changelog, the newest, or an error naming what is missing.
func latestRelease(changelog []byte) (version, date string, err error) {
	m := releaseHeading.FindSubmatch(changelog)
	if m == nil {
		return "", "", fmt.Errorf("no release heading %q", "## [X.Y.Z] - YYYY-MM-DD")
	}
	return string(m[1]), string(m[2]), nil
}

// semver is a release version as tagged: vMAJOR.MINOR.PATCH, without
// leading zeros, a pre-release or build metadata optional.
var semver = regexp.MustCompile(`^v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)

func TestVersionIsTheLatestRelease(t *testing.T) {
	if !semver.MatchString(Version) {
		t.Fatalf("Version %q is not a semantic version vX.Y.Z", Version)
	}
	changelog, err := os.ReadFile("../../CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	v, date, err := latestRelease(changelog)
	if err != nil {
		t.Fatalf("CHANGELOG.md: %v", err)
	}
	if "v"+v != Version {
		t.Errorf("CHANGELOG.md's latest release is [%s] (%s), Version is %s: release both together (docs/releasing.md)", v, date, Version)
	}
	if !regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`).MatchString(date) {
		t.Errorf("CHANGELOG.md's release [%s] has the date %q, want YYYY-MM-DD", v, date)
	}
}

// The VS Code extension (editors/vscode) and the interop tests' package
// (editors/interop) carry the same version, without the v npm refuses.
func TestNodePackagesHaveTheVersion(t *testing.T) {
	for _, path := range []string{"../../editors/vscode/package.json", "../../editors/interop/package.json"} {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var pkg struct {
			Version string `json:"version"`
		}
		if err := json.Unmarshal(data, &pkg); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if "v"+pkg.Version != Version {
			t.Errorf("%s: version %q, want %q (Version without its v)", path, pkg.Version, Version[1:])
		}
	}
}

// Each module of the repository that requires the main module requires
// it at Version: a user's build resolves it by that requirement, since Go
// ignores a dependency's replace directives.
func TestModulesRequireVersion(t *testing.T) {
	files, err := filepath.Glob("../../contrib/*/go.mod")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "../../bench/go.mod")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		f, err := modfile.ParseLax(file, data, nil)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, r := range f.Require {
			if r.Mod.Path == "github.com/fsmgen/fsmgen" || path.Dir(r.Mod.Path) == "github.com/fsmgen/fsmgen/contrib" {
				found = found || r.Mod.Path == "github.com/fsmgen/fsmgen"
				if r.Mod.Version != Version {
					t.Errorf("%s requires %s %s, want %s", file, r.Mod.Path, r.Mod.Version, Version)
				}
			}
		}
		if !found {
			t.Errorf("%s does not require github.com/fsmgen/fsmgen", file)
		}
	}
}

func TestLatestRelease(t *testing.T) {
	for _, tc := range []struct {
		changelog, version, date, err string
	}{
		{changelog: "# Changelog\n\n## [Unreleased]\n\n### Added\n\n- x\n\n## [1.2.3] - 2026-11-27\n\n## [1.2.2] - 2026-11-01\n", version: "1.2.3", date: "2026-11-27"},
		{changelog: "# Changelog\n\n## [Unreleased]\n", err: `no release heading "## [X.Y.Z] - YYYY-MM-DD"`},
		{changelog: "## 1.2.3 - 2026-11-27\n", err: `no release heading "## [X.Y.Z] - YYYY-MM-DD"`},
	} {
		v, date, err := latestRelease([]byte(tc.changelog))
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if v != tc.version || date != tc.date || gotErr != tc.err {
			t.Errorf("latestRelease(%q) = %q, %q, %q; want %q, %q, %q", tc.changelog, v, date, gotErr, tc.version, tc.date, tc.err)
		}
	}
}
