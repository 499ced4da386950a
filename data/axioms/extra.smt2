; Operator properties beyond the original's A0-A43, each a true property
; of an operator of this project that the original did not have.

;; @axiom X1
;; @about the two layouts of transpose compute the same tensor
;; @note The layout is a cost and layout-search choice (a strided view
;; @note or a contiguous copy), not a different value; the generator pairs
;; @note the two, so without this axiom those pairs could not be proved.
;; @shape x = m n
(assert (forall ((x T))
  (= (transpose 1 x) (transpose 0 x))))

;; @axiom X2
;; @about relu after matmul is matmul with a fused relu
;; @note The counterpart of A13 for matmul, whose fused activation the
;; @note original did not have.
;; @shape x = m k
;; @shape y = k n
(assert (forall ((x T) (y T))
  (= (relu (matmul 0 x y)) (matmul 1 x y))))

;; @axiom X3
;; @about enlarging a kernel to the size it already has is the identity
;; @note enlarge pads the kernel axes 2 and 3 with zeros up to kh x kw and
;; @note empties their split trees; when x is already kh x kw and those
;; @note trees are empty, nothing changes. Needs shape facts: the original
;; @note could not state it (its axioms know no shapes).
;; @shape x = co ci kh kw
;; @kernel kh kw
(assert (forall ((kh Int) (kw Int) (x T))
  (=> (and (= (dim 2 x) kh) (= (dim 3 x) kw) (= (splits 2 x) 0) (= (splits 3 x) 0))
      (= (enlarge kh kw x) x))))

;; @axiom X4
;; @about enlarge distributes over a concat on a channel axis (0 or 1)
;; @note enlarge pads every kernel slice alike and keeps the trees of axes
;; @note 0 and 1, so joining before or after is the same. On axes 2 and 3
;; @note it is false (the pieces would be padded separately).
;; @rank 4
;; @shape x = *
;; @shape y = * [a]=e
;; @kernel kh kw
;; @where d2 <= kh && d3 <= kw
;; @param a = 0,1
(assert (forall ((a Int) (kh Int) (kw Int) (x T) (y T))
  (=> (or (= a 0) (= a 1))
      (= (enlarge kh kw (concat a x y)) (concat a (enlarge kh kw x) (enlarge kh kw y))))))

;; @axiom X5
;; @about enlarge distributes over ewadd
;; @note The padding is zeros, and 0 + 0 = 0.
;; @shape x = co ci dh dw
;; @shape y = co ci dh dw
;; @kernel kh kw dh dw
;; @where dh <= kh && dw <= kw
(assert (forall ((kh Int) (kw Int) (x T) (y T))
  (= (enlarge kh kw (ewadd x y)) (ewadd (enlarge kh kw x) (enlarge kh kw y)))))

;; @axiom X6
;; @about enlarge distributes over ewmul
;; @note The padding is zeros, and 0 * 0 = 0.
;; @shape x = co ci dh dw
;; @shape y = co ci dh dw
;; @kernel kh kw dh dw
;; @where dh <= kh && dw <= kw
(assert (forall ((kh Int) (kw Int) (x T) (y T))
  (= (enlarge kh kw (ewmul x y)) (ewmul (enlarge kh kw x) (enlarge kh kw y)))))

;; @axiom X7
;; @about enlarge commutes with smul
;; @note The padding is zeros, and 0 * w = 0.
;; @shape x = co ci dh dw
;; @shape w = scalar
;; @kernel kh kw dh dw
;; @where dh <= kh && dw <= kw
(assert (forall ((kh Int) (kw Int) (x T) (w T))
  (= (enlarge kh kw (smul x w)) (smul (enlarge kh kw x) w))))

;; @axiom X8
;; @about enlarge commutes with relu
;; @note The padding is zeros, and relu(0) = 0.
;; @shape x = co ci dh dw
;; @kernel kh kw dh dw
;; @where dh <= kh && dw <= kw
(assert (forall ((kh Int) (kw Int) (x T))
  (= (enlarge kh kw (relu x)) (relu (enlarge kh kw x)))))

;; @axiom X9
;; @about a stride-1 SAME conv2d of an enlarged input is the enlarged conv2d
;; @note Where enlarge pads the input (dh < kh, say), the kernel has size 1
;; @note on that axis, so each padded row is convolved alone: zeros in,
;; @note zeros out (relu(0) = 0), and the other rows see what they saw
;; @note before. Where it does not pad, the input is unchanged there. Both
;; @note sides keep axis 0's tree from x and axis 1's from w's axis 0, and
;; @note empty the spatial trees. Not in the original (it has no shapes).
;; @shape x = n c dh dw
;; @shape w = co c eh ew
;; @kernel kh kw dh dw eh ew
;; @where dh <= kh && dw <= kw
;; @param act = 0,1
(assert (forall ((act Int) (kh Int) (kw Int) (x T) (w T))
  (=> (and (or (= (dim 2 x) kh) (= (dim 2 w) 1)) (or (= (dim 3 x) kw) (= (dim 3 w) 1)))
      (= (conv2d 1 1 0 act (enlarge kh kw x) w) (enlarge kh kw (conv2d 1 1 0 act x w))))))

;; @axiom X10
;; @about conv2d of a channel concat with a batch concat of weights is grouped
;; @note The shape-guarded form of the known-bad "grouped convolution" (see
;; @note bad/grouped_conv.smt2): true when x and z have equal channel counts
;; @note and y and w equal shapes. Then the right side has twice the
;; @note groups of each left conv2d, its first half reading x with y and
;; @note its second z with w; the trees agree (axis 0 from the inputs,
;; @note axis 1 the concat of y's and w's axis 0).
;; @note Its pattern needs both sides present, and (dim 0 y) and (dim 0 w):
;; @note it fires only on weights whose types the query states, never on
;; @note const_pool or const_iconv (no facts; see README.md). Without that,
;; @note on one workstation candidate over const_pool, its merges let A23
;; @note match 600,000 times (A35 and A38 feeding it), 17-40 s past a 5 s
;; @note timeout and 2 GB.
;; @shape x = n c h w
;; @shape z = n c h w
;; @shape y = co c kh kw
;; @shape w = co c kh kw
;; @kernel kh kw
;; @param sh = 1,2
;; @param sw = 1,2
;; @param pad = 0,1
;; @param act = 0,1
(assert (forall ((sh Int) (sw Int) (pad Int) (act Int) (x T) (y T) (z T) (w T))
  (! (=> (and (= (dim 1 x) (dim 1 z)) (= (dim 0 y) (dim 0 w)) (= (dim 1 y) (dim 1 w)))
         (= (concat 1 (conv2d sh sw pad act x y) (conv2d sh sw pad act z w))
            (conv2d sh sw pad act (concat 1 x z) (concat 0 y w))))
     :pattern ((concat 1 (conv2d sh sw pad act x y) (conv2d sh sw pad act z w))
               (conv2d sh sw pad act (concat 1 x z) (concat 0 y w)) (dim 0 y) (dim 0 w)))))

;; @axiom X11
;; @about conv2d of a channel-duplicated input with two groups is the plain conv2d
;; @note With concat(1, x, x) (2c channels) and a weight of c input
;; @note channels, the conv2d has 2 groups, and both read x: every output
;; @note channel is what the ungrouped conv2d of x gives it. The tree of
;; @note axis 0 is x's on both sides (concat keeps the tree its equal
;; @note operands share). Fires only on the left side: the right side
;; @note would grow a concat on every conv2d. An odd co makes the left
;; @note side ill-typed (2 groups must divide it).
;; @shape x = n c h w
;; @shape w = co c kh kw
;; @kernel kh kw
;; @param sh = 1,2
;; @param sw = 1,2
;; @param pad = 0,1
;; @param act = 0,1
(assert (forall ((sh Int) (sw Int) (pad Int) (act Int) (x T) (w T))
  (! (=> (= (dim 1 w) (dim 1 x))
         (= (conv2d sh sw pad act (concat 1 x x) w) (conv2d sh sw pad act x w)))
     :pattern ((conv2d sh sw pad act (concat 1 x x) w)))))

;; @axiom X12
;; @about smul by the scalar one is the identity
;; @note smul keeps every tree of x.
;; @rank 2,3,4
;; @shape x = *
;; @const const_one = scalar
(assert (forall ((x T))
  (= (smul x (const_one 0 0 0 0 0)) x)))

;; @axiom X13
;; @about the scalar one times a scalar is that scalar
;; @note smul's second operand is always a scalar, and so is the result
;; @note when the first one is; scalars have no trees.
;; @shape w = scalar
;; @const const_one = scalar
(assert (forall ((w T))
  (= (smul (const_one 0 0 0 0 0) w) w)))

;; @axiom X14
;; @about relu of all ones is all ones
;; @note Fired by the constant alone (as X17 and X18), so that every
;; @note constant of a query is known to be some relu's result, which is
;; @note how X31 and X32 learn that it is non-negative.
;; @rank 2,3,4
;; @const const_one = *
(assert (forall ((r Int) (d0 Int) (d1 Int) (d2 Int) (d3 Int))
  (! (= (relu (const_one r d0 d1 d2 d3)) (const_one r d0 d1 d2 d3))
     :pattern ((const_one r d0 d1 d2 d3)))))

;; @axiom X15
;; @about conv2d of an all-ones input does not depend on its channel count
;; @note Every output channel sums, over the weight's input channels, the
;; @note window sums of a ones image: the same for any channel count the
;; @note weight accepts (c and d multiples of y's axis 1). Trees: axis 0
;; @note from the (empty) input, axis 1 from y, on both sides. Fires only
;; @note when both sides are present, so it adds no term.
;; @note @check none: its constants of one kind have different shapes,
;; @note and the small-tensor check gives every constant of a kind the one
;; @note @const shape; tests/test_verify.c checks it exactly instead.
;; @check none
;; @const const_one = n c h w
;; @shape y = co ci kh kw
;; @kernel kh kw
;; @param sh = 1,2
;; @param sw = 1,2
;; @param pad = 0,1
;; @param act = 0,1
(assert (forall ((sh Int) (sw Int) (pad Int) (act Int) (n Int) (c Int) (d Int) (h Int) (w Int)
                 (y T))
  (! (= (conv2d sh sw pad act (const_one 4 n c h w) y) (conv2d sh sw pad act (const_one 4 n d h w) y))
     :pattern ((conv2d sh sw pad act (const_one 4 n c h w) y)
               (conv2d sh sw pad act (const_one 4 n d h w) y)))))

;; @axiom X16
;; @about ewmul of the identity kernel with itself is the identity kernel
;; @note Its entries are 0 and 1, and both square to themselves; constants
;; @note have empty trees. The two sides are the same shape however many
;; @note channels const_iconv takes.
;; @kernel kh kw
;; @const const_iconv = c c kh kw
(assert (forall ((kh Int) (kw Int))
  (= (ewmul (const_iconv kh kw) (const_iconv kh kw)) (const_iconv kh kw))))

;; @axiom X17
;; @about relu of the identity kernel is the identity kernel
;; @note Its entries are 0 and 1, which relu keeps.
;; @kernel kh kw
;; @const const_iconv = c c kh kw
(assert (forall ((kh Int) (kw Int))
  (! (= (relu (const_iconv kh kw)) (const_iconv kh kw)) :pattern ((const_iconv kh kw)))))

;; @axiom X18
;; @about relu of the identity matrix is the identity matrix
;; @note Its entries are 0 and 1, which relu keeps.
;; @const const_imm = k k
(assert (forall ((k Int))
  (! (= (relu (const_imm k)) (const_imm k)) :pattern ((const_imm k)))))

;; @axiom X19
;; @about ewmul of the identity matrix with itself is the identity matrix
;; @note Its entries are 0 and 1, and both square to themselves.
;; @const const_imm = k k
(assert (forall ((k Int))
  (= (ewmul (const_imm k) (const_imm k)) (const_imm k))))

;; @axiom X20
;; @about on an input one column wide, a SAME conv2d with an all-ones kernel needs only one column of it
;; @note With SAME padding the single output column sees the single input
;; @note column through one kernel column (the others meet padding), and
;; @note every column of an all-ones kernel is the same. Both weights are
;; @note constants (empty trees); the output width is 1 for any stride.
;; @note @check none: its constants of one kind have different shapes,
;; @note and the small-tensor check gives every constant of a kind the one
;; @note @const shape; tests/test_verify.c checks it exactly instead.
;; @check none
;; @shape x = n c h 1
;; @const const_one = co ci kh kw
;; @kernel kh kw
;; @param sh = 1,2
;; @param sw = 1,2
;; @param act = 0,1
(assert (forall ((sh Int) (sw Int) (act Int) (co Int) (ci Int) (kh Int) (kw Int) (x T))
  (=> (= (dim 3 x) 1)
      (= (conv2d sh sw 0 act x (const_one 4 co ci kh kw))
         (conv2d sh sw 0 act x (const_one 4 co ci kh 1))))))

;; @axiom X21
;; @about on an input one row high, a SAME conv2d with an all-ones kernel needs only one row of it
;; @note X20 for rows.
;; @note @check none: its constants of one kind have different shapes,
;; @note and the small-tensor check gives every constant of a kind the one
;; @note @const shape; tests/test_verify.c checks it exactly instead.
;; @check none
;; @shape x = n c 1 w
;; @const const_one = co ci kh kw
;; @kernel kh kw
;; @param sh = 1,2
;; @param sw = 1,2
;; @param act = 0,1
(assert (forall ((sh Int) (sw Int) (act Int) (co Int) (ci Int) (kh Int) (kw Int) (x T))
  (=> (= (dim 2 x) 1)
      (= (conv2d sh sw 0 act x (const_one 4 co ci kh kw))
         (conv2d sh sw 0 act x (const_one 4 co ci 1 kw))))))

;; @axiom X22
;; @about pool_avg commutes with a conv2d that mixes channels per pixel
;; @note Where the weight is 1 wide (or the input is, so that one kernel
;; @note column meets data), a stride-1 SAME conv2d without activation
;; @note mixes the channels of each pixel alone, linearly; pool_avg (SAME,
;; @note stride 1) is a linear filter of each channel alone; the two
;; @note commute. Trees: pooling empties axis 1, which the left side takes
;; @note from w's axis 0, hence the guard that w has none there.
;; @shape x = n c h w
;; @shape w = co c eh ew
;; @kernel kh kw eh ew
(assert (forall ((kh Int) (kw Int) (x T) (w T))
  (=> (and (or (= (dim 2 w) 1) (= (dim 2 x) 1)) (or (= (dim 3 w) 1) (= (dim 3 x) 1))
           (= (splits 0 w) 0))
      (= (conv2d 1 1 0 0 (pool_avg kh kw 1 1 0 x) w) (pool_avg kh kw 1 1 0 (conv2d 1 1 0 0 x w))))))

;; @axiom X23
;; @about transpose of an all-ones matrix is the all-ones matrix of the swapped shape
;; @note Constants have empty trees, which transpose swaps. Fires only on
;; @note the left side: the right one is every all-ones matrix.
;; @note @check none: its constants of one kind have different shapes,
;; @note and the small-tensor check gives every constant of a kind the one
;; @note @const shape; tests/test_verify.c checks it exactly instead.
;; @check none
;; @const const_one = m n
(assert (forall ((m Int) (n Int))
  (! (= (transpose 0 (const_one 2 m n 0 0)) (const_one 2 n m 0 0))
     :pattern ((transpose 0 (const_one 2 m n 0 0))))))

;; @axiom X24
;; @about ewmul by a concat of all-ones tensors is ewmul by all ones
;; @note The values agree; so do the trees when x has none on axis a: the
;; @note concat's node there meets x's empty tree and ewmul keeps neither,
;; @note while on other axes the concat keeps the ones' empty trees.
;; @note @check none: its constants of one kind have different shapes,
;; @note and the small-tensor check gives every constant of a kind the one
;; @note @const shape; tests/test_verify.c checks it exactly instead.
;; @check none
;; @rank 2,3,4
;; @shape x = *
;; @param a = axes
;; @const const_one = *
(assert (forall ((a Int) (r Int) (d0 Int) (d1 Int) (d2 Int) (d3 Int) (e0 Int) (e1 Int) (e2 Int)
                 (e3 Int) (x T))
  (! (=> (= (splits a x) 0)
         (= (ewmul (concat a (const_one r d0 d1 d2 d3) (const_one r e0 e1 e2 e3)) x)
            (ewmul (const_one r (ite (= a 0) (+ d0 e0) d0) (ite (= a 1) (+ d1 e1) d1)
                              (ite (= a 2) (+ d2 e2) d2) (ite (= a 3) (+ d3 e3) d3))
                   x)))
     :pattern ((ewmul (concat a (const_one r d0 d1 d2 d3) (const_one r e0 e1 e2 e3)) x)))))

;; @axiom X25
;; @about ewadd of a concat of all-ones tensors is ewadd of all ones
;; @note As X24, for ewadd (which keeps trees the same way).
;; @note @check none: its constants of one kind have different shapes,
;; @note and the small-tensor check gives every constant of a kind the one
;; @note @const shape; tests/test_verify.c checks it exactly instead.
;; @check none
;; @rank 2,3,4
;; @shape x = *
;; @param a = axes
;; @const const_one = *
(assert (forall ((a Int) (r Int) (d0 Int) (d1 Int) (d2 Int) (d3 Int) (e0 Int) (e1 Int) (e2 Int)
                 (e3 Int) (x T))
  (! (=> (= (splits a x) 0)
         (= (ewadd (concat a (const_one r d0 d1 d2 d3) (const_one r e0 e1 e2 e3)) x)
            (ewadd (const_one r (ite (= a 0) (+ d0 e0) d0) (ite (= a 1) (+ d1 e1) d1)
                              (ite (= a 2) (+ d2 e2) d2) (ite (= a 3) (+ d3 e3) d3))
                   x)))
     :pattern ((ewadd (concat a (const_one r d0 d1 d2 d3) (const_one r e0 e1 e2 e3)) x)))))

;; @axiom X26
;; @about ewmul by the identity matrix ignores a transpose of the other operand
;; @note (x^T * I)[i][j] is x[j][i] where i = j and 0 elsewhere: the
;; @note diagonal alone, which transpose keeps (either layout: the same
;; @note values). Trees: ewmul keeps a tree only where both operands agree
;; @note and const_imm has none, so both sides have none on either axis.
;; @note From the k=4 unknowns (weight algebra over const_imm).
;; @shape x = k k
;; @const const_imm = k k
;; @param l = 0,1
(assert (forall ((l Int) (k Int) (x T))
  (= (ewmul (transpose l x) (const_imm k)) (ewmul x (const_imm k)))))

;; @axiom X27
;; @about pool_avg of a channel concat does not depend on how the concat is nested
;; @note Concat is not associative under split trees (semantics.md section
;; @note 1), but pooling keeps axis 0's tree alone: the two nestings give
;; @note the same values, and on axis 0 both keep x's tree if x, y and z
;; @note agree there and none otherwise. From the k=4 unknowns.
;; @shape x = n c h w
;; @shape y = n d h w
;; @shape z = n e h w
;; @kernel kh kw
;; @param sh = 1,2
;; @param sw = 1,2
;; @param pad = 0,1
(assert (forall ((kh Int) (kw Int) (sh Int) (sw Int) (pad Int) (x T) (y T) (z T))
  (= (pool_avg kh kw sh sw pad (concat 1 (concat 1 x y) z))
     (pool_avg kh kw sh sw pad (concat 1 x (concat 1 y z))))))

;; @axiom X28
;; @about pool_max of a channel concat does not depend on how the concat is nested
;; @note As X27, for pool_max.
;; @shape x = n c h w
;; @shape y = n d h w
;; @shape z = n e h w
;; @kernel kh kw
;; @param sh = 1,2
;; @param sw = 1,2
;; @param pad = 0,1
(assert (forall ((kh Int) (kw Int) (sh Int) (sw Int) (pad Int) (x T) (y T) (z T))
  (= (pool_max kh kw sh sw pad (concat 1 (concat 1 x y) z))
     (pool_max kh kw sh sw pad (concat 1 x (concat 1 y z))))))

;; @axiom X29
;; @about conv2d of a channel concat does not depend on how the concat is nested
;; @note The data's values are the same either way (so are its groups);
;; @note conv2d keeps axis 0's tree from the data (x's if x, y and z agree
;; @note there, none otherwise, for both nestings) and axis 1's from the
;; @note weight. From the k=4 unknowns. Checked with a batch of one (the
;; @note batch plays no part; it keeps the domain small).
;; @shape x = 1 c h w
;; @shape y = 1 d h w
;; @shape z = 1 e h w
;; @shape v = o g kh kw
;; @kernel kh kw
;; @param sh = 1,2
;; @param sw = 1,2
;; @param pad = 0,1
;; @param act = 0,1
(assert (forall ((sh Int) (sw Int) (pad Int) (act Int) (x T) (y T) (z T) (v T))
  (= (conv2d sh sw pad act (concat 1 (concat 1 x y) z) v)
     (conv2d sh sw pad act (concat 1 x (concat 1 y z)) v))))

;; @axiom X30
;; @about matmul by a row concat does not depend on how the concat is nested
;; @note matmul keeps rows' trees from x and columns' from its right
;; @note operand, whose axis 1 keeps y's tree if y, z and u agree there
;; @note and none otherwise, for both nestings; the values are the same.
;; @note From the k=4 unknowns.
;; @note Checked with pieces of 1, 2 and 1 rows (the validator's shapes
;; @note cannot make x's columns their sum).
;; @shape x = m 4
;; @shape y = 1 n
;; @shape z = 2 n
;; @shape u = 1 n
;; @param act = 0,1
(assert (forall ((act Int) (x T) (y T) (z T) (u T))
  (= (matmul act x (concat 0 (concat 0 y z) u))
     (matmul act x (concat 0 y (concat 0 z u))))))

;; @axiom X31
;; @about relu of a non-negative tensor scaled by a scalar scales the scalar's relu
;; @note relu(z) >= 0 elementwise, so relu(relu(z) * w) = relu(z) * max(w, 0)
;; @note for the scalar w. With X14, X17 and X18 it covers the constants
;; @note (all entries 0 or 1). Trees: smul and relu keep z's on both sides.
;; @note From the k=3 and k=4 unknowns (scalar algebra). @relu max: it
;; @note needs relu's sign, which an arbitrary f with f(0) = 0 lacks.
;; @note Element by element, so rank 2 checks it: Z3's nonlinear queries
;; @note over larger tensors only take longer.
;; @relu max
;; @rank 2
;; @shape z = *
;; @shape w = scalar
(assert (forall ((z T) (w T))
  (= (relu (smul (relu z) w)) (smul (relu z) (relu w)))))

;; @axiom X32
;; @about relu of an ewmul by a non-negative tensor is the ewmul of the other operand's relu
;; @note b >= 0 gives relu(a * b) = max(a, 0) * b, elementwise. Trees: ewmul
;; @note keeps those on which x and z agree, relu keeps its operand's, on
;; @note both sides. From the k=3 and k=4 unknowns (constants as masks).
;; @note Checked at rank 2, as X31.
;; @relu max
;; @rank 2
;; @shape x = *
;; @shape z = *
(assert (forall ((x T) (z T))
  (= (relu (ewmul x (relu z))) (ewmul (relu x) (relu z)))))

;; @axiom X33
;; @about smul of a scalar by a scalar commutes
;; @note smul's second operand is always a scalar; when the first is one
;; @note too (rank 0, a shape fact), the product is of two numbers.
;; @note Scalars have no trees. From the k=3 and k=4 unknowns (scalar
;; @note algebra: smul(relu(s0), s0) = smul(s0, relu(s0))).
;; @shape x = scalar
;; @shape w = scalar
(assert (forall ((x T) (w T))
  (=> (= (rank x) 0) (= (smul x w) (smul w x)))))

;; @axiom X34
;; @about pool_avg commutes with a conv2d by an all-ones kernel as wide as the pool, or 1 wide, on each axis
;; @note On each spatial axis a stride-1 SAME box filter is one banded 0/1
;; @note matrix (the same band for the same width, the identity for width
;; @note 1), so the pool's and the kernel's filters are the same matrix or
;; @note one of them is the identity: they commute. The kernel's channel
;; @note sums (groups included) act per pixel and commute with a per-channel
;; @note filter. Box filters of different widths do not commute at the
;; @note borders, hence the guard. Trees: axis 0 from x on both sides (conv2d
;; @note and pool_avg keep it), axis 1 from the constant (none). From the
;; @note k=3 unknowns (box filters commute).
;; @shape x = n c h w
;; @const const_one = co ci eh ew
;; @kernel kh kw eh ew
(assert (forall ((kh Int) (kw Int) (co Int) (ci Int) (eh Int) (ew Int) (x T))
  (=> (and (or (= eh 1) (= eh kh)) (or (= ew 1) (= ew kw)))
      (= (pool_avg kh kw 1 1 0 (conv2d 1 1 0 0 x (const_one 4 co ci eh ew)))
         (conv2d 1 1 0 0 (pool_avg kh kw 1 1 0 x) (const_one 4 co ci eh ew))))))

;; @axiom X35
;; @about the product of two matrices masked to their diagonals is the diagonal of their ewmul
;; @note ewmul by the identity matrix keeps the diagonal alone; diagonal
;; @note matrices multiply entry by entry. Trees: none on either side
;; @note (const_imm has none, and ewmul keeps only trees both operands
;; @note share). From the k=3 and k=4 unknowns (the identity matrix's algebra).
;; @shape x = k k
;; @shape y = k k
;; @const const_imm = k k
(assert (forall ((k Int) (x T) (y T))
  (= (matmul 0 (ewmul x (const_imm k)) (ewmul y (const_imm k)))
     (ewmul (ewmul x y) (const_imm k)))))

;; @axiom X36
;; @about a matmul by an all-ones left factor does not depend on the order of a row concat
;; @note ones(m, p + q) times [x; y] puts the column sums of x and y into
;; @note every output row, whatever their order. Trees: axis 0 from the
;; @note constant (none), axis 1 from the concat's, which keeps x's and y's
;; @note where they agree: the same for both orders. From the k=4 unknowns
;; @note (109 of them).
;; @shape x = p n
;; @shape y = q n
;; @const const_one = m s
;; @param act = 0,1
(assert (forall ((act Int) (m Int) (s Int) (x T) (y T))
  (= (matmul act (const_one 2 m s 0 0) (concat 0 x y))
     (matmul act (const_one 2 m s 0 0) (concat 0 y x)))))

;; @axiom X37
;; @about a concat forgets the nesting of its right operand on another axis where the operands' trees differ
;; @note concat on axis a keeps each other axis's tree only where both
;; @note operands have the same one. The two nestings of a concat on axis
;; @note b != a have equal values, trees with 2 + the operands' splits on
;; @note axis b, and the same trees on every other axis (a tree is kept
;; @note only where all three operands agree, nested either way). Where
;; @note x's axis-b tree has another number of splits, it differs from
;; @note both nestings' trees, so the outer concat empties axis b on both
;; @note sides (the guard); on axis a it joins x's tree with the same
;; @note tree. From the k=4 unknowns (concat pairs).
;; @rank 2
;; @shape x = * [b]=m
;; @shape y = * [b]=p
;; @shape z = * [b]=q
;; @shape u = * [b]=s
;; @param a = axes
;; @param b = axes
(assert (forall ((a Int) (b Int) (x T) (y T) (z T) (u T))
  (! (=> (and (not (= a b))
              (not (= (splits b x) (+ 2 (splits b y) (splits b z) (splits b u)))))
         (= (concat a x (concat b (concat b y z) u)) (concat a x (concat b y (concat b z u)))))
     :pattern ((concat a x (concat b (concat b y z) u)))
     :pattern ((concat a x (concat b y (concat b z u)))))))

;; @axiom X38
;; @about a concat forgets the nesting of its left operand on another axis where the operands' trees differ
;; @note X37 with the re-nested operand on the left.
;; @rank 2
;; @shape x = * [b]=m
;; @shape y = * [b]=p
;; @shape z = * [b]=q
;; @shape u = * [b]=s
;; @param a = axes
;; @param b = axes
(assert (forall ((a Int) (b Int) (x T) (y T) (z T) (u T))
  (! (=> (and (not (= a b))
              (not (= (splits b x) (+ 2 (splits b y) (splits b z) (splits b u)))))
         (= (concat a (concat b (concat b y z) u) x) (concat a (concat b y (concat b z u)) x)))
     :pattern ((concat a (concat b (concat b y z) u) x))
     :pattern ((concat a (concat b y (concat b z u)) x)))))

;; @axiom X39
;; @about ewmul forgets the nesting of a concat operand where the other operand's tree differs
;; @note ewmul keeps each axis's tree only where both operands have the
;; @note same one. The two nestings of a concat on axis b have equal
;; @note values, trees with 2 + the operands' splits on axis b, and the
;; @note same trees on every other axis. Where x's axis-b tree has another
;; @note number of splits, it differs from both, and axis b is empty on
;; @note both sides (the guard). With A3 it covers either operand. From
;; @note the k=4 unknowns (ewmul by a nested concat).
;; @rank 2
;; @shape x = * [b]=m
;; @shape y = * [b]=p
;; @shape z = * [b]=q
;; @shape u = * [b]=s
;; @param b = axes
(assert (forall ((b Int) (x T) (y T) (z T) (u T))
  (! (=> (not (= (splits b x) (+ 2 (splits b y) (splits b z) (splits b u))))
         (= (ewmul x (concat b (concat b y z) u)) (ewmul x (concat b y (concat b z u)))))
     :pattern ((ewmul x (concat b (concat b y z) u)))
     :pattern ((ewmul x (concat b y (concat b z u)))))))

;; @axiom X40
;; @about ewadd forgets the nesting of a concat operand where the other operand's tree differs
;; @note X39 for ewadd, which keeps trees the same way; with A1 it covers
;; @note either operand.
;; @rank 2
;; @shape x = * [b]=m
;; @shape y = * [b]=p
;; @shape z = * [b]=q
;; @shape u = * [b]=s
;; @param b = axes
(assert (forall ((b Int) (x T) (y T) (z T) (u T))
  (! (=> (not (= (splits b x) (+ 2 (splits b y) (splits b z) (splits b u))))
         (= (ewadd x (concat b (concat b y z) u)) (ewadd x (concat b y (concat b z u)))))
     :pattern ((ewadd x (concat b (concat b y z) u)))
     :pattern ((ewadd x (concat b y (concat b z u)))))))

;; @axiom X41
;; @about conv2d does not depend on how its weight's input-channel concat is nested
;; @note The weight's values are the same either way; conv2d takes axis 0's
;; @note tree from the data and axis 1's from the weight's axis 0, which
;; @note both nestings keep where p, q and r agree (and nowhere else). The
;; @note weight's axis-1 tree itself is dropped. From the k=4 unknowns
;; @note (a weight of channel copies). Checked at stride 1 and one image
;; @note size per axis (neither plays a part).
;; @shape x = 1 c h h
;; @shape p = o e kh kw
;; @shape q = o f kh kw
;; @shape r = o g kh kw
;; @kernel kh kw
;; @param sh = 1
;; @param sw = 1
;; @param pad = 0,1
;; @param act = 0,1
(assert (forall ((sh Int) (sw Int) (pad Int) (act Int) (x T) (p T) (q T) (r T))
  (= (conv2d sh sw pad act x (concat 1 (concat 1 p q) r))
     (conv2d sh sw pad act x (concat 1 p (concat 1 q r))))))

;; @axiom X42
;; @about conv2d of a channel concat does not depend on how the concat's left operand is nested
;; @note As X29 one level down: conv2d's data gives axis 0's tree alone
;; @note (kept where x, y, z and u agree, for both nestings), and X29's
;; @note rotations at the top cannot reach (a (b c)) d from ((a b) c) d.
;; @note From the k=4 unknowns. Checked at stride 1, square images and
;; @note kernels, without activation (none plays a part).
;; @shape x = 1 c h h
;; @shape y = 1 d h h
;; @shape z = 1 e h h
;; @shape u = 1 f h h
;; @shape v = o g kh kh
;; @kernel kh
;; @param sh = 1
;; @param sw = 1
;; @param pad = 0
;; @param act = 0
(assert (forall ((sh Int) (sw Int) (pad Int) (act Int) (x T) (y T) (z T) (u T) (v T))
  (= (conv2d sh sw pad act (concat 1 (concat 1 (concat 1 x y) z) u) v)
     (conv2d sh sw pad act (concat 1 (concat 1 x (concat 1 y z)) u) v))))

;; @axiom X43
;; @about conv2d of an input concatenated four times, in four groups, is the plain conv2d
;; @note X11 for four copies (two pairs): each group of output channels
;; @note convolves one copy of x with its part of w. Trees: axis 0 from
;; @note x's (the concats keep it), axis 1 from w's axis 0, on both sides.
;; @note From the k=3 and k=4 unknowns. Checked with 4 output channels
;; @note (four groups need a multiple of 4).
;; @shape x = n c h w
;; @shape v = 4 c kh kw
;; @kernel kh kw
;; @param sh = 1,2
;; @param sw = 1,2
;; @param pad = 0,1
;; @param act = 0,1
(assert (forall ((sh Int) (sw Int) (pad Int) (act Int) (x T) (v T))
  (=> (= (dim 1 v) (dim 1 x))
      (= (conv2d sh sw pad act (concat 1 (concat 1 x x) (concat 1 x x)) v) (conv2d sh sw pad act x v)))))

;; @axiom X44
;; @about the diagonal of a product whose left factor is masked to its diagonal is an entrywise product
;; @note (D y)[i][i] = x[i][i] y[i][i] for D = x masked by the identity
;; @note matrix. Trees: none on either side (const_imm has none, ewmul
;; @note keeps only shared ones). From the k=4 unknowns (the identity
;; @note matrix's algebra).
;; @shape x = k k
;; @shape y = k k
;; @const const_imm = k k
(assert (forall ((k Int) (x T) (y T))
  (= (ewmul (matmul 0 (ewmul x (const_imm k)) y) (const_imm k))
     (ewmul (ewmul x y) (const_imm k)))))

;; @axiom X45
;; @about the diagonal of a product whose right factor is masked to its diagonal is an entrywise product
;; @note (x D)[i][i] = x[i][i] y[i][i]; X44's mirror.
;; @shape x = k k
;; @shape y = k k
;; @const const_imm = k k
(assert (forall ((k Int) (x T) (y T))
  (= (ewmul (matmul 0 x (ewmul y (const_imm k))) (const_imm k))
     (ewmul (ewmul x y) (const_imm k)))))

;; @axiom X46
;; @about the diagonal of x times y transposed is that of y times x transposed
;; @note Both are sum over j of x[i][j] y[i][j]. Trees: none (as X44).
;; @shape x = k n
;; @shape y = k n
;; @const const_imm = k k
(assert (forall ((k Int) (x T) (y T))
  (= (ewmul (matmul 0 x (transpose 0 y)) (const_imm k))
     (ewmul (matmul 0 y (transpose 0 x)) (const_imm k)))))

;; @axiom X47
;; @about the diagonal of x transposed times y is that of y transposed times x
;; @note Both are sum over j of x[j][i] y[j][i]. Trees: none (as X44).
;; @shape x = n k
;; @shape y = n k
;; @const const_imm = k k
(assert (forall ((k Int) (x T) (y T))
  (= (ewmul (matmul 0 (transpose 0 x) y) (const_imm k))
     (ewmul (matmul 0 (transpose 0 y) x) (const_imm k)))))

;; @axiom X48
;; @about scaling the columns of a right factor by column sums commutes with the product
;; @note ones(p, q) z repeats z's column sums s in every row, so
;; @note y * (ones z) scales y's column j by s[j], and so does x (y * (ones
;; @note z)) = (x y) * (ones z) with the ones of x's row count; x is
;; @note square here, so that one constant shape serves both sides (the
;; @note small-tensor check gives a constant one shape). Trees: axis 1 on
;; @note both sides is y's where it agrees with z's; axis 0 is x's on the
;; @note left and empty on the right unless x's is empty (the guard). From
;; @note the k=4 unknowns (all-ones products).
;; @shape x = p p
;; @shape y = p n
;; @shape z = q n
;; @const const_one = p q
(assert (forall ((p Int) (q Int) (x T) (y T) (z T))
  (=> (= (splits 0 x) 0)
      (= (matmul 0 x (ewmul y (matmul 0 (const_one 2 p q 0 0) z)))
         (ewmul (matmul 0 x y) (matmul 0 (const_one 2 p q 0 0) z))))))

;; @axiom X49
;; @about scaling the rows of a left factor by row sums commutes with the product
;; @note z ones(q, p) repeats z's row sums t in every column, so (y * (z
;; @note ones)) x = (y x) * (z ones): X48's mirror, with x square and the
;; @note guard on its axis-1 tree.
;; @shape x = p p
;; @shape y = m p
;; @shape z = m q
;; @const const_one = q p
(assert (forall ((p Int) (q Int) (x T) (y T) (z T))
  (=> (= (splits 1 x) 0)
      (= (matmul 0 (ewmul y (matmul 0 z (const_one 2 q p 0 0))) x)
         (ewmul (matmul 0 y x) (matmul 0 z (const_one 2 q p 0 0)))))))

;; @axiom X50
;; @about ewadd forgets an ewmul by all ones where the other operand has no split trees
;; @note The values agree (A41's), and with y's trees all empty ewadd
;; @note empties every axis on both sides, whatever x's trees (A41 alone
;; @note needs x's empty). From the k=4 unknowns (an ewmul by all ones of a
;; @note concat).
;; @rank 2,3,4
;; @shape x = *
;; @shape y = *
;; @const const_one = *
(assert (forall ((r Int) (d0 Int) (d1 Int) (d2 Int) (d3 Int) (x T) (y T))
  (=> (and (= (splits 0 y) 0) (= (splits 1 y) 0) (= (splits 2 y) 0) (= (splits 3 y) 0))
      (= (ewadd (ewmul x (const_one r d0 d1 d2 d3)) y) (ewadd x y)))))

;; @axiom X51
;; @about a matmul forgets an ewmul by all ones of its right operand where that has no column tree
;; @note Equal values; the result's axis 0 is x's on both sides, its axis
;; @note 1 the right operand's, empty on both sides under the guard (its
;; @note axis-0 tree is summed away). From the k=4 unknowns.
;; @shape x = m p
;; @shape y = p n
;; @const const_one = p n
;; @param act = 0,1
(assert (forall ((act Int) (p Int) (n Int) (x T) (y T))
  (=> (= (splits 1 y) 0)
      (= (matmul act x (ewmul y (const_one 2 p n 0 0))) (matmul act x y)))))

;; @axiom X52
;; @about an ewmul by all ones of a matmul's left operand moves to its result
;; @note Equal values. Trees: axis 0 empty on both sides (the ewmul's),
;; @note axis 1 z's on the left and empty on the right, so z's must be
;; @note empty (the guard); z is square so that one constant shape serves
;; @note both sides. From the k=4 unknowns.
;; @shape y = m p
;; @shape z = p p
;; @const const_one = m p
(assert (forall ((m Int) (p Int) (y T) (z T))
  (=> (= (splits 1 z) 0)
      (= (matmul 0 (ewmul y (const_one 2 m p 0 0)) z)
         (ewmul (matmul 0 y z) (const_one 2 m p 0 0))))))

;; @axiom X53
;; @about an ewmul by all ones of a matmul's right operand moves to its result
;; @note X52's mirror: axis 1 empty on both sides, axis 0 z's on the left
;; @note and empty on the right under the guard; z square.
;; @shape z = m m
;; @shape y = m n
;; @const const_one = m n
(assert (forall ((m Int) (n Int) (y T) (z T))
  (=> (= (splits 0 z) 0)
      (= (matmul 0 z (ewmul y (const_one 2 m n 0 0)))
         (ewmul (matmul 0 z y) (const_one 2 m n 0 0))))))

;; @axiom X54
;; @about a product by a diagonal matrix on the left scales rows, which commutes with an ewmul
;; @note D = x masked by the identity matrix is diagonal, so (D y)[i][j] =
;; @note x[i][i] y[i][j] and (D y) * z = D (y * z). Trees: D has none, so
;; @note axis 0 is empty on both sides; axis 1 is y's where it agrees with
;; @note z's on both sides. From the k=4 unknowns (the identity matrix's
;; @note algebra).
;; @shape x = k k
;; @shape y = k n
;; @shape z = k n
;; @const const_imm = k k
(assert (forall ((k Int) (x T) (y T) (z T))
  (= (ewmul (matmul 0 (ewmul x (const_imm k)) y) z)
     (matmul 0 (ewmul x (const_imm k)) (ewmul y z)))))

;; @axiom X55
;; @about a product by a diagonal matrix on the right scales columns, which commutes with an ewmul
;; @note X54's mirror: (y D) * z = (y * z) D; axis 1 empty on both sides.
;; @shape x = k k
;; @shape y = m k
;; @shape z = m k
;; @const const_imm = k k
(assert (forall ((k Int) (x T) (y T) (z T))
  (= (ewmul (matmul 0 y (ewmul x (const_imm k))) z)
     (matmul 0 (ewmul y z) (ewmul x (const_imm k))))))

;; @axiom X56
;; @about a matmul by an all-ones left factor sums a row concat's operands, so an ewadd may move between them
;; @note ones(m, s) times [a + b; c] puts the column sums of a, b and c into
;; @note every output row, as ones(m, s) times [a; b + c] does. Trees:
;; @note axis 0 from the constant (none); axis 1 is the concat's, kept
;; @note where its operands agree: the common tree of a, b and c where
;; @note all three agree, else empty, on both sides. From the k=4
;; @note unknowns (all-ones products), with X36 for the operands' order.
;; @shape a = p n
;; @shape b = p n
;; @shape c = p n
;; @const const_one = m s
;; @param act = 0,1
(assert (forall ((act Int) (m Int) (s Int) (a T) (b T) (c T))
  (= (matmul act (const_one 2 m s 0 0) (concat 0 (ewadd a b) c))
     (matmul act (const_one 2 m s 0 0) (concat 0 a (ewadd b c))))))
