; Axioms A0-A43: the operator properties of semantics.md section 4, with
; the original's numbering. Format and domain keys: README.md. Every
; transpose is written with layout 0 (materialized); X1 in extra.smt2
; equates the two layouts.

;; @axiom A0
;; @about ewadd is associative
;; @rank 2,3,4
;; @shape x = *
;; @shape y = *
;; @shape z = *
(assert (forall ((x T) (y T) (z T))
  (= (ewadd x (ewadd y z)) (ewadd (ewadd x y) z))))

;; @axiom A1
;; @about ewadd is commutative
;; @rank 2,3,4
;; @shape x = *
;; @shape y = *
(assert (forall ((x T) (y T))
  (= (ewadd x y) (ewadd y x))))

;; @axiom A2
;; @about ewmul is associative
;; @rank 2,3,4
;; @shape x = *
;; @shape y = *
;; @shape z = *
(assert (forall ((x T) (y T) (z T))
  (= (ewmul x (ewmul y z)) (ewmul (ewmul x y) z))))

;; @axiom A3
;; @about ewmul is commutative
;; @rank 2,3,4
;; @shape x = *
;; @shape y = *
(assert (forall ((x T) (y T))
  (= (ewmul x y) (ewmul y x))))

;; @axiom A4
;; @about ewmul distributes over ewadd
;; @rank 2,3,4
;; @shape x = *
;; @shape y = *
;; @shape z = *
(assert (forall ((x T) (y T) (z T))
  (= (ewmul (ewadd x y) z) (ewadd (ewmul x z) (ewmul y z)))))

;; @axiom A5
;; @about smul is associative
;; @rank 2,3,4
;; @shape x = *
;; @shape y = scalar
;; @shape w = scalar
(assert (forall ((x T) (y T) (w T))
  (= (smul (smul x y) w) (smul x (smul y w)))))

;; @axiom A6
;; @about smul distributes over ewadd
;; @rank 2,3,4
;; @shape x = *
;; @shape y = *
;; @shape w = scalar
(assert (forall ((x T) (y T) (w T))
  (= (smul (ewadd x y) w) (ewadd (smul x w) (smul y w)))))

;; @axiom A7
;; @about smul moves into one operand of ewmul
;; @rank 2,3,4
;; @shape x = *
;; @shape y = *
;; @shape w = scalar
(assert (forall ((x T) (y T) (w T))
  (= (smul (ewmul x y) w) (ewmul x (smul y w)))))

;; @axiom A8
;; @about smul commutes with transpose
;; @shape x = m n
;; @shape w = scalar
(assert (forall ((x T) (w T))
  (= (smul (transpose 0 x) w) (transpose 0 (smul x w)))))

;; @axiom A9
;; @about smul moves into the right operand of matmul
;; @shape x = m k
;; @shape y = k n
;; @shape w = scalar
(assert (forall ((x T) (y T) (w T))
  (= (smul (matmul 0 x y) w) (matmul 0 x (smul y w)))))

;; @axiom A10
;; @about smul distributes over concat
;; @rank 2,3,4
;; @shape x = *
;; @shape y = * [a]=e
;; @shape w = scalar
;; @param a = axes
(assert (forall ((a Int) (x T) (y T) (w T))
  (= (smul (concat a x y) w) (concat a (smul x w) (smul y w)))))

;; @axiom A11
;; @about a scalar factor moves from the input of conv2d to its weight
;; @shape x = n c h w
;; @shape y = co c kh kw
;; @shape w = scalar
;; @kernel kh kw
;; @param sh = 1,2
;; @param sw = 1,2
;; @param pad = 0,1
;; @param act = 0,1
(assert (forall ((sh Int) (sw Int) (pad Int) (act Int) (x T) (y T) (w T))
  (= (conv2d sh sw pad act (smul x w) y) (conv2d sh sw pad act x (smul y w)))))

;; @axiom A12
;; @about smul of a conv2d moves to its input
;; @shape x = n c h w
;; @shape y = co c kh kw
;; @shape w = scalar
;; @kernel kh kw
;; @param sh = 1,2
;; @param sw = 1,2
;; @param pad = 0,1
(assert (forall ((sh Int) (sw Int) (pad Int) (x T) (y T) (w T))
  (= (smul (conv2d sh sw pad 0 x y) w) (conv2d sh sw pad 0 (smul x w) y))))

;; @axiom A13
;; @about relu after conv2d is conv2d with a fused relu
;; @shape x = n c h w
;; @shape y = co c kh kw
;; @kernel kh kw
;; @param sh = 1,2
;; @param sw = 1,2
;; @param pad = 0,1
(assert (forall ((sh Int) (sw Int) (pad Int) (x T) (y T))
  (= (relu (conv2d sh sw pad 0 x y)) (conv2d sh sw pad 1 x y))))

;; @axiom A14
;; @about relu distributes over concat
;; @rank 2,3,4
;; @shape x = *
;; @shape y = * [a]=e
;; @param a = axes
(assert (forall ((a Int) (x T) (y T))
  (= (relu (concat a x y)) (concat a (relu x) (relu y)))))

;; @axiom A15
;; @about relu commutes with transpose
;; @shape x = m n
(assert (forall ((x T))
  (= (relu (transpose 0 x)) (transpose 0 (relu x)))))

;; @axiom A16
;; @about conv2d distributes over ewadd of weights
;; @shape x = n c h w
;; @shape y = co c kh kw
;; @shape z = co c kh kw
;; @kernel kh kw
;; @param sh = 1,2
;; @param sw = 1,2
;; @param pad = 0,1
(assert (forall ((sh Int) (sw Int) (pad Int) (x T) (y T) (z T))
  (= (conv2d sh sw pad 0 x (ewadd y z))
     (ewadd (conv2d sh sw pad 0 x y) (conv2d sh sw pad 0 x z)))))

;; @axiom A17
;; @about conv2d distributes over ewadd of inputs
;; @shape x = n c h w
;; @shape y = n c h w
;; @shape z = co c kh kw
;; @kernel kh kw
;; @param sh = 1,2
;; @param sw = 1,2
;; @param pad = 0,1
(assert (forall ((sh Int) (sw Int) (pad Int) (x T) (y T) (z T))
  (= (conv2d sh sw pad 0 (ewadd x y) z)
     (ewadd (conv2d sh sw pad 0 x z) (conv2d sh sw pad 0 y z)))))

;; @axiom A18
;; @about a sum of two convolutions is one over concatenated channels
;; @shape x = n c h w
;; @shape y = co c kh kw
;; @shape z = n d h w
;; @shape w = co d kh kw
;; @kernel kh kw
;; @param sh = 1,2
;; @param sw = 1,2
;; @param pad = 0,1
(assert (forall ((sh Int) (sw Int) (pad Int) (x T) (y T) (z T) (w T))
  (= (ewadd (conv2d sh sw pad 0 x y) (conv2d sh sw pad 0 z w))
     (conv2d sh sw pad 0 (concat 1 x z) (concat 1 y w)))))

;; @axiom A19
;; @about a sum of two matmuls is one over concatenated inner dimensions
;; @shape x = m k
;; @shape y = k n
;; @shape z = m l
;; @shape w = l n
(assert (forall ((x T) (y T) (z T) (w T))
  (= (ewadd (matmul 0 x y) (matmul 0 z w))
     (matmul 0 (concat 1 x z) (concat 0 y w)))))

;; @axiom A20
;; @about concat of ewadds is ewadd of concats
;; @rank 2,3,4
;; @shape x = *
;; @shape y = *
;; @shape z = * [a]=e
;; @shape w = * [a]=e
;; @param a = axes
(assert (forall ((a Int) (x T) (y T) (z T) (w T))
  (= (concat a (ewadd x y) (ewadd z w)) (ewadd (concat a x z) (concat a y w)))))

;; @axiom A21
;; @about concat of ewmuls is ewmul of concats
;; @rank 2,3,4
;; @shape x = *
;; @shape y = *
;; @shape z = * [a]=e
;; @shape w = * [a]=e
;; @param a = axes
(assert (forall ((a Int) (x T) (y T) (z T) (w T))
  (= (concat a (ewmul x y) (ewmul z w)) (ewmul (concat a x z) (concat a y w)))))

;; @axiom A22
;; @about conv2d of a batch concat is the concat of the conv2ds
;; @shape x = n c h w
;; @shape y = m c h w
;; @shape z = co c kh kw
;; @kernel kh kw
;; @param sh = 1,2
;; @param sw = 1,2
;; @param pad = 0,1
;; @param act = 0,1
(assert (forall ((sh Int) (sw Int) (pad Int) (act Int) (x T) (y T) (z T))
  (= (concat 0 (conv2d sh sw pad act x z) (conv2d sh sw pad act y z))
     (conv2d sh sw pad act (concat 0 x y) z))))

;; @axiom A23
;; @about conv2d with concatenated output channels is the concat of the conv2ds
;; @shape x = n c h w
;; @shape y = co c kh kw
;; @shape z = cp c kh kw
;; @kernel kh kw
;; @param sh = 1,2
;; @param sw = 1,2
;; @param pad = 0,1
;; @param act = 0,1
(assert (forall ((sh Int) (sw Int) (pad Int) (act Int) (x T) (y T) (z T))
  (= (concat 1 (conv2d sh sw pad act x y) (conv2d sh sw pad act x z))
     (conv2d sh sw pad act x (concat 0 y z)))))

;; @axiom A24
;; @about matmul is associative
;; @shape x = m k
;; @shape y = k l
;; @shape z = l n
(assert (forall ((x T) (y T) (z T))
  (= (matmul 0 x (matmul 0 y z)) (matmul 0 (matmul 0 x y) z))))

;; @axiom A25
;; @about split0 undoes concat
;; @rank 2,3,4
;; @shape x = *
;; @shape y = * [a]=e
;; @param a = axes
(assert (forall ((a Int) (x T) (y T))
  (= (split0 a (concat a x y)) x)))

;; @axiom A26
;; @about split1 undoes concat
;; @rank 2,3,4
;; @shape x = *
;; @shape y = * [a]=e
;; @param a = axes
(assert (forall ((a Int) (x T) (y T))
  (= (split1 a (concat a x y)) y)))

;; @axiom A27
;; @about matmul distributes over a column concat of its right operand
;; @shape x = m k
;; @shape y = k n
;; @shape z = k l
(assert (forall ((x T) (y T) (z T))
  (= (matmul 0 x (concat 1 y z)) (concat 1 (matmul 0 x y) (matmul 0 x z)))))

;; @axiom A28
;; @about matmul distributes over ewadd of its right operand
;; @shape x = m k
;; @shape y = k n
;; @shape z = k n
(assert (forall ((x T) (y T) (z T))
  (= (matmul 0 x (ewadd y z)) (ewadd (matmul 0 x y) (matmul 0 x z)))))

;; @axiom A29
;; @about transpose is an involution
;; @shape x = m n
(assert (forall ((x T))
  (= (transpose 0 (transpose 0 x)) x)))

;; @axiom A30
;; @about transpose of a product
;; @shape x = m k
;; @shape y = k n
(assert (forall ((x T) (y T))
  (= (transpose 0 (matmul 0 x y)) (matmul 0 (transpose 0 y) (transpose 0 x)))))

;; @axiom A31
;; @about transpose turns a row concat into a column concat
;; @shape x = m n
;; @shape y = l n
(assert (forall ((x T) (y T))
  (= (transpose 0 (concat 0 x y)) (concat 1 (transpose 0 x) (transpose 0 y)))))

;; @axiom A32
;; @about a 2x2 block matrix built rows first equals columns first
;; @shape x = m n
;; @shape y = m l
;; @shape z = p n
;; @shape w = p l
(assert (forall ((x T) (y T) (z T) (w T))
  (= (concat 0 (concat 1 x y) (concat 1 z w))
     (concat 1 (concat 0 x z) (concat 0 y w)))))

;; @axiom A33
;; @about transpose distributes over ewadd
;; @shape x = m n
;; @shape y = m n
(assert (forall ((x T) (y T))
  (= (transpose 0 (ewadd x y)) (ewadd (transpose 0 x) (transpose 0 y)))))

;; @axiom A34
;; @about transpose distributes over ewmul
;; @shape x = m n
;; @shape y = m n
(assert (forall ((x T) (y T))
  (= (transpose 0 (ewmul x y)) (ewmul (transpose 0 x) (transpose 0 y)))))

;; @axiom A35
;; @about pool_avg of a channel concat is the concat of the pool_avgs
;; @shape x = n c h w
;; @shape y = n d h w
;; @kernel kh kw
;; @param sh = 1,2
;; @param sw = 1,2
;; @param pad = 0,1
(assert (forall ((kh Int) (kw Int) (sh Int) (sw Int) (pad Int) (x T) (y T))
  (= (concat 1 (pool_avg kh kw sh sw pad x) (pool_avg kh kw sh sw pad y))
     (pool_avg kh kw sh sw pad (concat 1 x y)))))

;; @axiom A36
;; @about pool_max of a batch concat is the concat of the pool_maxes
;; @shape x = n c h w
;; @shape y = m c h w
;; @kernel kh kw
;; @param sh = 1,2
;; @param sw = 1,2
;; @param pad = 0,1
(assert (forall ((kh Int) (kw Int) (sh Int) (sw Int) (pad Int) (x T) (y T))
  (= (concat 0 (pool_max kh kw sh sw pad x) (pool_max kh kw sh sw pad y))
     (pool_max kh kw sh sw pad (concat 0 x y)))))

;; @axiom A37
;; @about pool_max of a channel concat is the concat of the pool_maxes
;; @shape x = n c h w
;; @shape y = n d h w
;; @kernel kh kw
;; @param sh = 1,2
;; @param sw = 1,2
;; @param pad = 0,1
(assert (forall ((kh Int) (kw Int) (sh Int) (sw Int) (pad Int) (x T) (y T))
  (= (concat 1 (pool_max kh kw sh sw pad x) (pool_max kh kw sh sw pad y))
     (pool_max kh kw sh sw pad (concat 1 x y)))))

;; @axiom A38
;; @about conv2d with the averaging kernel is pool_avg
;; @shape x = n c h w
;; @kernel kh kw
;; @param sh = 1,2
;; @param sw = 1,2
;; @param pad = 0,1
;; @const const_pool = c 1 kh kw
(assert (forall ((sh Int) (sw Int) (pad Int) (kh Int) (kw Int) (x T))
  (= (conv2d sh sw pad 0 x (const_pool kh kw)) (pool_avg kh kw sh sw pad x))))

;; @axiom A39
;; @about conv2d with the identity kernel is the identity
;; @note Guarded to odd kernels: with an even kernel SAME padding puts the
;; @note window one place off the kernel's centre (kh/2) and the identity
;; @note fails. The original states it without the guard.
;; @shape x = n c h w
;; @kernel kh kw
;; @const const_iconv = c c kh kw
(assert (forall ((kh Int) (kw Int) (x T))
  (=> (and (= (mod kh 2) 1) (= (mod kw 2) 1))
      (= (conv2d 1 1 0 0 x (const_iconv kh kw)) x))))

;; @axiom A40
;; @about matmul by the identity matrix is the identity
;; @shape x = m k
;; @const const_imm = k k
(assert (forall ((k Int) (x T))
  (= (matmul 0 x (const_imm k)) x)))

;; @axiom A41
;; @about ewmul by all ones is the identity (x without split trees)
;; @note Under split-tree semantics this holds only when x has empty split
;; @note trees: ewmul keeps a tree only where both operands agree, and
;; @note const_one's trees are empty. The original states it unguarded;
;; @note here the guard asks for empty trees on every axis of x (shape
;; @note facts, README.md; past the rank a tree is empty). Unguarded, it let the others entail A5, A6, X12 and
;; @note X23 (the validator's redundancy check).
;; @rank 2,3,4
;; @shape x = *
;; @const const_one = *
(assert (forall ((r Int) (d0 Int) (d1 Int) (d2 Int) (d3 Int) (x T))
  (=> (and (= (splits 0 x) 0) (= (splits 1 x) 0) (= (splits 2 x) 0) (= (splits 3 x) 0))
      (= (ewmul x (const_one r d0 d1 d2 d3)) x))))

;; @axiom A42
;; @about pooling the identity kernel gives the averaging kernel
;; @note No small-tensor check: the two sides have different shapes
;; @note ([c,c,kh,kw] against [c,1,kh,kw]); they agree as convolution
;; @note weights, which is how the original uses it.
;; @check none
;; @kernel kh kw
;; @const const_iconv = c c kh kw
;; @const const_pool = c 1 kh kw
(assert (forall ((kh Int) (kw Int))
  (= (pool_avg kh kw 1 1 0 (const_iconv kh kw)) (const_pool kh kw))))

;; @axiom A43
;; @about a SAME convolution may enlarge its kernel
;; @note Guarded to stride 1: with stride 2 and an even input size, SAME
;; @note padding puts the window of the enlarged kernel one place off the
;; @note original's (pad_before = total/2 depends on the kernel), and the
;; @note identity fails. taso-validate found it (counterexample with a
;; @note 2x2 input, a 1x1 kernel enlarged to 3x3, stride 2). The original
;; @note states it for every stride.
;; @shape x = n c h w
;; @shape y = co c dh dw
;; @kernel kh kw dh dw
;; @where dh <= kh && dw <= kw
;; @param sh = 1,2
;; @param sw = 1,2
;; @param act = 0,1
(assert (forall ((sh Int) (sw Int) (act Int) (kh Int) (kw Int) (x T) (y T))
  (=> (and (= sh 1) (= sw 1))
      (= (conv2d sh sw 0 act x y) (conv2d sh sw 0 act x (enlarge kh kw y))))))
