; Logistics (typed STRIPS, as in the IPC): trucks carry packages between the places of one city,
; airplanes carry them between the airports of different cities.
; Inequality keeps `drive-truck` and `fly-airplane` from being self-loops (as in gripper.pddl's
; `move`): the same reachable states and plans, without no-op actions. pymimir reads `(not (= ..))`
; only under :negative-preconditions.
(define (domain logistics)
  (:requirements :strips :typing :equality :negative-preconditions)
  (:types truck airplane - vehicle
          package vehicle - physobj
          airport location - place
          city place physobj - object)
  (:predicates (in-city ?p - place ?c - city)
               (at ?o - physobj ?p - place)
               (in ?pkg - package ?v - vehicle))
  (:action load-truck
    :parameters (?pkg - package ?t - truck ?p - place)
    :precondition (and (at ?t ?p) (at ?pkg ?p))
    :effect (and (in ?pkg ?t) (not (at ?pkg ?p))))
  (:action load-airplane
    :parameters (?pkg - package ?a - airplane ?p - place)
    :precondition (and (at ?a ?p) (at ?pkg ?p))
    :effect (and (in ?pkg ?a) (not (at ?pkg ?p))))
  (:action unload-truck
    :parameters (?pkg - package ?t - truck ?p - place)
    :precondition (and (at ?t ?p) (in ?pkg ?t))
    :effect (and (at ?pkg ?p) (not (in ?pkg ?t))))
  (:action unload-airplane
    :parameters (?pkg - package ?a - airplane ?p - place)
    :precondition (and (at ?a ?p) (in ?pkg ?a))
    :effect (and (at ?pkg ?p) (not (in ?pkg ?a))))
  (:action drive-truck
    :parameters (?t - truck ?from ?to - place ?c - city)
    :precondition (and (at ?t ?from) (in-city ?from ?c) (in-city ?to ?c) (not (= ?from ?to)))
    :effect (and (at ?t ?to) (not (at ?t ?from))))
  (:action fly-airplane
    :parameters (?a - airplane ?from ?to - airport)
    :precondition (and (at ?a ?from) (not (= ?from ?to)))
    :effect (and (at ?a ?to) (not (at ?a ?from)))))
