package gen

import (
	"github.com/dave/jennifer/jen"

	"github.com/fsmgen/fsmgen/dsl"
)

func testCode(source string, m *dsl.Machine) *jen.File {
	f := jen.NewFile(m.Package)
	f.HeaderComment(header(source))
	return f
}
