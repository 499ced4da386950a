; Known-bad fixture (semantics.md section 5): grouped convolution. True when
; x, z have equal shapes and so do y, w; violated for other valid shapes
; (the small-tensor check with N = {1, 3} finds a counterexample).

;; @axiom BAD2
;; @about a concat of two convolutions is one grouped convolution (WRONG in general)
;; @shape x = n c h w
;; @shape y = co c kh kw
;; @shape z = n d h w
;; @shape w = cp d kh kw
;; @kernel kh kw
;; @param sh = 1,2
;; @param sw = 1,2
;; @param pad = 0,1
;; @param act = 0,1
(assert (forall ((sh Int) (sw Int) (pad Int) (act Int) (x T) (y T) (z T) (w T))
  (= (concat 1 (conv2d sh sw pad act x y) (conv2d sh sw pad act z w))
     (conv2d sh sw pad act (concat 1 x z) (concat 0 y w)))))
