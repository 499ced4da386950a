; Known-redundant fixture: an axiom the default set entails (ewadd's
; associativity A0 and commutativity A1 give it), for the validator's
; redundancy check, whose default set has no such axiom any more (A41's
; split-tree guard removed the last ones). True, but never part of the
; default axiom set (taso_axioms_load reads only the folder's top level).

;; @axiom R1
;; @about ewadd regrouped and reordered (follows from A0 and A1)
;; @rank 2,3,4
;; @shape x = *
;; @shape y = *
;; @shape z = *
(assert (forall ((x T) (y T) (z T))
  (= (ewadd x (ewadd y z)) (ewadd z (ewadd y x)))))
