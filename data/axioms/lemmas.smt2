; Lemmas of semantics.md section 4. Each is proved from the axioms once per
; run (the negation of the formula with fresh constants for its variables
; must be unsat) and then assumed like an axiom. An optional "@hint TERM"
; names a term, over the formula's variable names, that the proof search
; should consider; a hint adds no fact, so it cannot make a false lemma
; provable.

;; @lemma L1
;; @about the identity matrix is its own transpose
;; @const const_imm = k k
;; @hint (transpose 0 (matmul 0 (transpose 0 (const_imm k)) (const_imm k)))
(assert (forall ((k Int))
  (= (transpose 0 (const_imm k)) (const_imm k))))

;; @lemma L2
;; @about matmul by the identity matrix on the left is the identity
;; @shape x = k n
;; @const const_imm = k k
;; @hint (transpose 0 (transpose 0 (matmul 0 (const_imm k) x)))
(assert (forall ((k Int) (x T))
  (= (matmul 0 (const_imm k) x) x)))

;; @lemma L3
;; @about pool_avg of a batch concat is the concat of the pool_avgs
;; @shape x = n c h w
;; @shape y = m c h w
;; @kernel kh kw
;; @param sh = 1,2
;; @param sw = 1,2
;; @param pad = 0,1
;; @hint (conv2d sh sw pad 0 x (const_pool kh kw))
;; @hint (conv2d sh sw pad 0 y (const_pool kh kw))
(assert (forall ((kh Int) (kw Int) (sh Int) (sw Int) (pad Int) (x T) (y T))
  (= (concat 0 (pool_avg kh kw sh sw pad x) (pool_avg kh kw sh sw pad y))
     (pool_avg kh kw sh sw pad (concat 0 x y)))))

;; @lemma L4
;; @about matmul distributes over a row concat of its left operand
;; @note Not in the original: the row counterpart of A27, derived through
;; @note transposes (A29-A31, A27), which E-matching does not invent alone.
;; @shape x = m k
;; @shape z = l k
;; @shape y = k n
;; @hint (transpose 0 (transpose 0 (matmul 0 (concat 0 x z) y)))
;; @hint (transpose 0 (transpose 0 (concat 0 (matmul 0 x y) (matmul 0 z y))))
(assert (forall ((x T) (z T) (y T))
  (= (concat 0 (matmul 0 x y) (matmul 0 z y)) (matmul 0 (concat 0 x z) y))))

;; @lemma L5
;; @about matmul distributes over ewadd of its left operand
;; @note Not in the original: the left counterpart of A28, derived through
;; @note transposes (A29, A30, A33, A28).
;; @shape x = m k
;; @shape y = m k
;; @shape z = k n
;; @hint (transpose 0 (transpose 0 (matmul 0 (ewadd x y) z)))
;; @hint (transpose 0 (transpose 0 (ewadd (matmul 0 x z) (matmul 0 y z))))
(assert (forall ((x T) (y T) (z T))
  (= (matmul 0 (ewadd x y) z) (ewadd (matmul 0 x z) (matmul 0 y z)))))

;; @lemma L6
;; @about transpose of a column concat is the row concat of the transposes
;; @note Not in the original: A31's counterpart for axis 1, through A29.
;; @shape x = m n
;; @shape y = m l
;; @hint (transpose 0 (concat 0 (transpose 0 x) (transpose 0 y)))
(assert (forall ((x T) (y T))
  (= (transpose 0 (concat 1 x y)) (concat 0 (transpose 0 x) (transpose 0 y)))))

;; @lemma L7
;; @about smul moves into the left operand of matmul
;; @note Not in the original: A9's counterpart for the left operand,
;; @note through transposes (A29, A30, A8, A9).
;; @shape x = m k
;; @shape y = k n
;; @shape w = scalar
;; @hint (transpose 0 (transpose 0 (matmul 0 (smul x w) y)))
;; @hint (transpose 0 (transpose 0 (smul (matmul 0 x y) w)))
(assert (forall ((x T) (y T) (w T))
  (= (matmul 0 (smul x w) y) (smul (matmul 0 x y) w))))
