/// The command side's decision: events to append (validated again by `evolve`).
package struct Decision {
    package var events: [Event] = []
    package var result = CommandResult()
}
