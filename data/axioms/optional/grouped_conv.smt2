; True axioms left out of the default set (this folder is not loaded by
; default; taso_axioms_add_file loads a file on purpose). Each says why.

;; @axiom X10
;; @about conv2d of a channel concat with a batch concat of weights is grouped
;; @note The shape-guarded form of the known-bad "grouped convolution" (see
;; @note bad/grouped_conv.smt2): true when x and z have equal channel counts
;; @note and y and w equal shapes. Then the right side has twice the
;; @note groups of each left conv2d, its first half reading x with y and
;; @note its second z with w; the trees agree (axis 0 from the inputs,
;; @note axis 1 the concat of y's and w's axis 0).
;; @note Not loaded by default: with A23, A35 and A38 it sends E-matching
;; @note into a loop on graphs over const_pool (one workstation candidate,
;; @note conv2d(enlarge(w13), const_pool) against a pool_avg of concats,
;; @note ran 17 to 40 s past a 5 s timeout and took 2 GB), even with the
;; @note pattern below, which needs both sides present.
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
               (conv2d sh sw pad act (concat 1 x z) (concat 0 y w))))))
