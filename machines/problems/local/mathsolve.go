package local

import (
	"errors"
	"fmt"
	"math/big"
	"strings"
	"unicode"
	"unicode/utf8"
)

// linear is a·v + b, with v the one variable of an expression.
type linear struct {
	a, b *big.Rat
}

func constant(r *big.Rat) linear { return linear{a: new(big.Rat), b: r} }

func (l linear) isConst() bool { return l.a.Sign() == 0 }

var errNotLinear = errors.New("not a linear expression in one variable")

// parser reads arithmetic with at most one variable, exactly, over the
// rationals: + - * / ^, parentheses, implicit products ("2x", "3(x+1)").
type parser struct {
	s   string
	i   int
	v   rune // the variable, 0 until one is seen
	err error
}

func parseLinear(s string) (linear, rune, error) {
	p := &parser{s: s}
	l := p.expr()
	if p.err == nil && p.i != len(p.s) {
		p.fail(fmt.Errorf("unexpected %q at %d", p.s[p.i:], p.i))
	}
	if p.err != nil {
		return linear{}, 0, p.err
	}
	return l, p.v, nil
}

func (p *parser) fail(err error) {
	if p.err == nil {
		p.err = err
	}
}

func (p *parser) peek() rune {
	if p.i >= len(p.s) {
		return 0
	}
	r, _ := utf8.DecodeRuneInString(p.s[p.i:])
	return r
}

func (p *parser) next() rune {
	r, n := utf8.DecodeRuneInString(p.s[p.i:])
	p.i += n
	return r
}

func (p *parser) expr() linear {
	l := p.term()
	for p.err == nil {
		switch p.peek() {
		case '+':
			p.next()
			r := p.term()
			l = linear{a: new(big.Rat).Add(l.a, r.a), b: new(big.Rat).Add(l.b, r.b)}
		case '-':
			p.next()
			r := p.term()
			l = linear{a: new(big.Rat).Sub(l.a, r.a), b: new(big.Rat).Sub(l.b, r.b)}
		default:
			return l
		}
	}
	return l
}

func (p *parser) term() linear {
	l := p.unary()
	for p.err == nil {
		c := p.peek()
		switch {
		case c == '*':
			p.next()
			l = p.mul(l, p.unary())
		case c == '/':
			p.next()
			r := p.unary()
			if !r.isConst() {
				p.fail(errNotLinear)
				return l
			}
			if r.b.Sign() == 0 {
				p.fail(errors.New("division by zero"))
				return l
			}
			inv := new(big.Rat).Inv(r.b)
			l = linear{a: new(big.Rat).Mul(l.a, inv), b: new(big.Rat).Mul(l.b, inv)}
		case c == '(' || unicode.IsLetter(c):
			l = p.mul(l, p.power()) // an implicit product
		default:
			return l
		}
	}
	return l
}

func (p *parser) mul(l, r linear) linear {
	switch {
	case l.isConst():
		return linear{a: new(big.Rat).Mul(l.b, r.a), b: new(big.Rat).Mul(l.b, r.b)}
	case r.isConst():
		return linear{a: new(big.Rat).Mul(l.a, r.b), b: new(big.Rat).Mul(l.b, r.b)}
	}
	p.fail(errNotLinear)
	return l
}

func (p *parser) unary() linear {
	switch p.peek() {
	case '-':
		p.next()
		l := p.unary()
		return linear{a: new(big.Rat).Neg(l.a), b: new(big.Rat).Neg(l.b)}
	case '+':
		p.next()
		return p.unary()
	}
	return p.power()
}

func (p *parser) power() linear {
	base := p.atom()
	if p.err != nil || p.peek() != '^' {
		return base
	}
	p.next()
	exp := p.unary()
	if p.err != nil {
		return base
	}
	if !exp.isConst() || !exp.b.IsInt() || exp.b.Num().CmpAbs(big.NewInt(64)) > 0 {
		p.fail(errors.New("exponent must be an integer constant of at most 64"))
		return base
	}
	n := exp.b.Num().Int64()
	if !base.isConst() {
		if n != 1 {
			p.fail(errNotLinear)
		}
		return base
	}
	if base.b.Sign() == 0 && n < 0 {
		p.fail(errors.New("division by zero"))
		return base
	}
	num := new(big.Int).Exp(base.b.Num(), big.NewInt(abs(n)), nil)
	den := new(big.Int).Exp(base.b.Denom(), big.NewInt(abs(n)), nil)
	r := new(big.Rat).SetFrac(num, den)
	if n < 0 {
		r.Inv(r)
	}
	return constant(r)
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

func (p *parser) atom() linear {
	c := p.peek()
	switch {
	case c == '(':
		p.next()
		l := p.expr()
		if p.peek() != ')' {
			p.fail(errors.New("missing )"))
			return l
		}
		p.next()
		return l
	case c >= '0' && c <= '9':
		start := p.i
		for c := p.peek(); (c >= '0' && c <= '9') || c == '.'; c = p.peek() {
			p.next()
		}
		r, ok := new(big.Rat).SetString(p.s[start:p.i])
		if !ok {
			p.fail(fmt.Errorf("bad number %q", p.s[start:p.i]))
			return constant(new(big.Rat))
		}
		return constant(r)
	case unicode.IsLetter(c):
		p.next()
		if unicode.IsLetter(p.peek()) {
			p.fail(errors.New("a variable is one letter"))
			return constant(new(big.Rat))
		}
		if p.v != 0 && p.v != c {
			p.fail(errors.New("more than one variable"))
			return constant(new(big.Rat))
		}
		p.v = c
		return linear{a: big.NewRat(1, 1), b: new(big.Rat)}
	case c == 0:
		p.fail(errors.New("unexpected end"))
	default:
		p.fail(fmt.Errorf("unexpected %q", c))
	}
	return constant(new(big.Rat))
}

// solveLinear solves lhs = rhs for its variable.
func solveLinear(equation string) (rune, *big.Rat, error) {
	lhs, rhs, ok := strings.Cut(equation, "=")
	if !ok || strings.Contains(rhs, "=") {
		return 0, nil, errors.New("not one equation")
	}
	l, lv, err := parseLinear(lhs)
	if err != nil {
		return 0, nil, err
	}
	r, rv, err := parseLinear(rhs)
	if err != nil {
		return 0, nil, err
	}
	v := lv
	if v == 0 {
		v = rv
	}
	if v == 0 || (rv != 0 && rv != v) {
		return 0, nil, errNotLinear
	}
	// a1·v + b1 = a2·v + b2  ⇒  v = (b2 - b1) / (a1 - a2)
	da := new(big.Rat).Sub(l.a, r.a)
	if da.Sign() == 0 {
		return 0, nil, errors.New("no unique solution")
	}
	x := new(big.Rat).Sub(r.b, l.b)
	return v, x.Quo(x, da), nil
}

// evalArithmetic evaluates an expression without variables.
func evalArithmetic(expr string) (*big.Rat, error) {
	l, v, err := parseLinear(expr)
	if err != nil {
		return nil, err
	}
	if v != 0 {
		return nil, errors.New("not arithmetic: has a variable")
	}
	return l.b, nil
}

// formatRat writes r as an integer, or as a fraction with its decimal value
// to four places.
func formatRat(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	return r.String() + " ≈ " + r.FloatString(4)
}
