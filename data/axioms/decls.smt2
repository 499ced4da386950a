; Declarations shared by every axiom file: one uninterpreted sort T for
; tensors, one uninterpreted function per operator. Integer arguments are
; the operator's parameters, in the order given; tensor arguments follow.
; Encodings: pad SAME=0 VALID=1, act NONE=0 RELU=1, layout materialized=0
; view=1. The verifier's term builder reads this file to learn each
; function's signature and refuses to start if it does not match the
; operator registry. Format: one declaration per line, nothing else.
(declare-sort T 0)
(declare-fun ewadd (T T) T)
(declare-fun ewmul (T T) T)
(declare-fun smul (T T) T)
(declare-fun relu (T) T)
; layout
(declare-fun transpose (Int T) T)
; act
(declare-fun matmul (Int T T) T)
; sh sw pad act
(declare-fun conv2d (Int Int Int Int T T) T)
; kh kw sh sw pad
(declare-fun pool_avg (Int Int Int Int Int T) T)
(declare-fun pool_max (Int Int Int Int Int T) T)
; axis
(declare-fun concat (Int T T) T)
(declare-fun split0 (Int T) T)
(declare-fun split1 (Int T) T)
; kh kw
(declare-fun enlarge (Int Int T) T)
; kh kw (the channel count is not an argument: see README.md)
(declare-fun const_pool (Int Int) T)
(declare-fun const_iconv (Int Int) T)
; k (the matrix is k x k)
(declare-fun const_imm (Int) T)
; rank d0 d1 d2 d3 (0 past the rank)
(declare-fun const_one (Int Int Int Int Int) T)
; axis (x, then the vector with one value per slice of that axis)
(declare-fun chmul (Int T T) T)
(declare-fun chadd (Int T T) T)
; Type functions, not operators: (dim a x) is the size of axis a of x,
; (splits a x) the number of concats in x's split tree on axis a (0: the
; tree is empty) and (rank x) the number of axes of x (0: a scalar). The
; verifier states them for every subterm of the two graphs of a query
; (README.md, "Shape facts"); axioms use them as guards.
(declare-fun dim (Int T) Int)
(declare-fun splits (Int T) Int)
(declare-fun rank (T) Int)
