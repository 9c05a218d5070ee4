package event

// libraryTexts returns the default display texts of a library event.
func libraryTexts(name string) (LocaleString, LocaleString, bool) {
	t, ok := texts[name]
	return t[0], t[1], ok
}

func tx(name, description LocaleString) [2]LocaleString { return [2]LocaleString{name, description} }

// texts holds the default display texts of the library's display events,
// taken from the reference's i18n/translations/lib/events.{de,en,fr,it}.yml
// (one version; these texts are versioned data). Types without
// an entry inherit their parent's texts, as Python class variables do.
var texts = map[string][2]LocaleString{
	"DisplayEvent": tx(
		L("Anzeigeereignis", "Display Event", "Événement d'Affichage", "Evento di Visualizzazione"),
		L("Ein Ereignis, das dem Benutzer Informationen anzeigt, ohne den Arbeitsablauf zu beeinflussen.",
			"An event that displays information to the user without affecting the workflow.",
			"Un événement qui affiche des informations à l'utilisateur sans affecter le flux de travail.",
			"Un evento che mostra informazioni all'utente senza influenzare il flusso di lavoro.")),
	"ConversationTitleEvent": tx(
		L("Gesprächstitel", "Conversation Title", "Titre de la Conversation", "Titolo della Conversazione"),
		L("Der Agent hat einen Titel erstellt, der das Thema des Gesprächs zusammenfasst.",
			"The agent generated a title summarizing the topic of the conversation.",
			"L'agent a généré un titre résumant le sujet de la conversation.",
			"L'agente ha generato un titolo che riassume l'argomento della conversazione.")),
	"FollowUpQuestionsEvent": tx(
		L("Folgefragen", "Follow-up Questions", "Questions de Suivi", "Domande di Approfondimento"),
		L("Der Agent hat Folgefragen vorgeschlagen, die der Benutzer als Nächstes stellen könnte.",
			"The agent suggested follow-up questions the user might want to ask next.",
			"L'agent a suggéré des questions de suivi que l'utilisateur pourrait vouloir poser ensuite.",
			"L'agente ha suggerito domande di approfondimento che l'utente potrebbe voler porre in seguito.")),
	"AgentInTheLoopExceptionEvent": tx(
		L("Fehler bei Aufgabendelegation", "Error in Task Delegation", "Erreur de Délégation de Tâche", "Errore nella Delega del Compito"),
		L("Ein anderer Agent, an den eine Aufgabe delegiert wurde, hat einen Fehler gemeldet und konnte die Anfrage nicht bearbeiten.",
			"Another agent to which a task was delegated reported an error and couldn't process the request.",
			"Un autre agent à qui une tâche a été déléguée a signalé une erreur et n'a pas pu traiter la demande.",
			"Un altro agente a cui è stato delegato un compito ha segnalato un errore e non ha potuto elaborare la richiesta.")),
	"AgentInTheLoopRequestEvent": tx(
		L("Delegation an anderen Agenten", "Task Delegation to Another Agent", "Délégation de Tâche à un Autre Agent", "Delega del Compito a un Altro Agente"),
		L("Der Agent hat eine Aufgabe an einen anderen Agenten weitergeleitet, um von dessen Spezialwissen zu profitieren.",
			"The agent has forwarded a task to another agent to benefit from their specialized knowledge.",
			"L'agent a transmis une tâche à un autre agent pour bénéficier de ses connaissances spécialisées.",
			"L'agente ha inoltrato un compito a un altro agente per beneficiare delle sue conoscenze specializzate.")),
	"AgentInTheLoopResponseEvent": tx(
		L("Antwort des delegierten Agenten", "Delegated Agent Response", "Réponse de l'Agent Délégué", "Risposta dell'Agente Delegato"),
		L("Der andere Agent hat die ihm zugewiesene Aufgabe erfolgreich bearbeitet und eine Antwort zurückgesendet.",
			"The other agent has successfully processed the assigned task and sent back a response.",
			"L'autre agent a traité avec succès la tâche assignée et a renvoyé une réponse.",
			"L'altro agente ha elaborato con successo il compito assegnato e ha inviato una risposta.")),
	"LimitChatHistoryEvent": tx(
		L("Chatverlauf begrenzt", "Chat History Limited", "Historique de Chat Limité", "Cronologia Chat Limitata"),
		L("Der Chatverlauf wurde aus Effizienzgründen gekürzt, wobei nur die relevantesten Teile beibehalten wurden.",
			"The chat history has been shortened for efficiency, keeping only the most relevant parts.",
			"L'historique du chat a été raccourci pour des raisons d'efficacité, en ne conservant que les parties les plus pertinentes.",
			"La cronologia della chat è stata abbreviata per motivi di efficienza, mantenendo solo le parti più rilevanti.")),
	// StartEvent has no texts of its own in the reference: it shows
	// DisplayEvent's, as do its subtypes without texts.
	"StopEvent": tx(
		L("Prozess beendet", "Process Completed", "Processus Terminé", "Processo Completato"),
		L("Der Agent hat seine Aufgabe abgeschlossen und gibt das Wort zurück an den Benutzer.",
			"The agent has completed its task and is returning control to the user.",
			"L'agent a terminé sa tâche et rend le contrôle à l'utilisateur.",
			"L'agente ha completato il suo compito e sta restituendo il controllo all'utente.")),
	"CostEvent": tx(
		L("Kostenübersicht", "Cost Overview", "Aperçu des Coûts", "Panoramica dei Costi"),
		L("Eine Übersicht der entstandenen Kosten für die durchgeführten Operationen.",
			"An overview of the costs incurred for the operations performed.",
			"Un aperçu des coûts encourus pour les opérations effectuées.",
			"Una panoramica dei costi sostenuti per le operazioni eseguite.")),
	"LLMCostEvent": tx(
		L("Sprachmodell-Kosten", "Language Model Costs", "Coûts du Modèle de Langage", "Costi del Modello di Linguaggio"),
		L("Bei der Interaktion mit dem Sprachmodell sind Kosten entstanden, die hier aufgelistet werden.",
			"Costs have been incurred during interaction with the language model, which are listed here.",
			"Des coûts ont été encourus lors de l'interaction avec le modèle de langage, qui sont listés ici.",
			"Sono stati sostenuti costi durante l'interazione con il modello di linguaggio, che sono elencati qui.")),
	"ChunkEvent": tx(
		L("Teilantwort", "Partial Response", "Réponse Partielle", "Risposta Parziale"),
		L("Der Agent hat einen Teil der Antwort generiert und an den Benutzer gesendet, der bereits angezeigt wird.",
			"The agent has generated a part of the answer and sent it to the user, which is already being displayed.",
			"L'agent a généré une partie de la réponse et l'a envoyée à l'utilisateur, qui est déjà affichée.",
			"L'agente ha generato una parte della risposta e l'ha inviata all'utente, che è già visualizzata.")),
	"ThoughtEvent": tx(
		L("Gedankengang", "Thought Process", "Processus de Réflexion", "Processo di Pensiero"),
		L("Der Agent teilt seinen internen Gedankenprozess mit, der ihm hilft, die Aufgabe zu verstehen und zu lösen.",
			"The agent shares its internal thought process, which helps it understand and solve the task.",
			"L'agent partage son processus de réflexion interne, ce qui l'aide à comprendre et à résoudre la tâche.",
			"L'agente condivide il suo processo di pensiero interno, che lo aiuta a comprendere e risolvere il compito.")),
	"GuardAcceptEvent": tx(
		L("Anfrage akzeptiert", "Request Accepted", "Demande Acceptée", "Richiesta Accettata"),
		L("Die Anfrage hat alle Sicherheitsprüfungen bestanden und darf fortgesetzt werden.",
			"The request passed all guard checks and is allowed to proceed.",
			"La demande a passé toutes les vérifications de sécurité et est autorisée à continuer.",
			"La richiesta ha superato tutti i controlli di sicurezza ed è autorizzata a procedere.")),
	"GuardRejectionEvent": tx(
		L("Anfrage abgelehnt", "Request Rejected", "Demande Rejetée", "Richiesta Respinta"),
		L("Die Anfrage wurde aus Sicherheitsgründen oder wegen Richtlinienverstössen abgelehnt.",
			"The request was rejected for security reasons or due to policy violations.",
			"La demande a été rejetée pour des raisons de sécurité ou en raison de violations de politique.",
			"La richiesta è stata respinta per motivi di sicurezza o a causa di violazioni delle politiche.")),
	"FewShotAcceptEvent": tx(
		L("Few-Shot-Prüfung bestanden", "Few-Shot Guard Accepted", "Garde Few-Shot Accepté", "Guardia Few-Shot Accettato"),
		L("Die Anfrage entspricht den Mustern aus Few-Shot-Beispielen und darf fortgesetzt werden.",
			"The request matches the patterns from few-shot examples and is allowed to proceed.",
			"La demande correspond aux modèles des exemples few-shot et est autorisée à continuer.",
			"La richiesta corrisponde ai modelli degli esempi few-shot ed è autorizzata a procedere.")),
	"FewShotRejectEvent": tx(
		L("Few-Shot-Prüfung nicht bestanden", "Few-Shot Guard Rejected", "Garde Few-Shot Rejeté", "Guardia Few-Shot Respinto"),
		L("Die Anfrage entspricht nicht den Mustern aus Few-Shot-Beispielen und wird blockiert.",
			"The request does not match the patterns from few-shot examples and is blocked.",
			"La demande ne correspond pas aux modèles des exemples few-shot et est bloquée.",
			"La richiesta non corrisponde ai modelli degli esempi few-shot ed è bloccata.")),
	"AgentSuitabilityAcceptEvent": tx(
		L("Agent geeignet für Aufgabe", "Agent Suitable for Task", "Agent Adapté à la Tâche", "Agente Adatto al Compito"),
		L("Die Fähigkeiten des Agenten entsprechen der Benutzeranfrage und können die Aufgabe bewältigen.",
			"The agent's capabilities match the user's request and can handle the task.",
			"Les capacités de l'agent correspondent à la demande de l'utilisateur et peuvent gérer la tâche.",
			"Le capacità dell'agente corrispondono alla richiesta dell'utente e possono gestire il compito.")),
	"AgentSuitabilityRejectEvent": tx(
		L("Agent ungeeignet für Aufgabe", "Agent Unsuitable for Task", "Agent Inadapté à la Tâche", "Agente Inadatto al Compito"),
		L("Die Fähigkeiten des Agenten entsprechen nicht der Benutzeranfrage und können die Aufgabe nicht bewältigen.",
			"The agent's capabilities do not match the user's request and cannot handle the task.",
			"Les capacités de l'agent ne correspondent pas à la demande de l'utilisateur et ne peuvent pas gérer la tâche.",
			"Le capacità dell'agente non corrispondono alla richiesta dell'utente e non possono gestire il compito.")),
	"ContextSufficientAcceptEvent": tx(
		L("Ausreichend Kontext verfügbar", "Sufficient Context Available", "Contexte Suffisant Disponible", "Contesto Sufficiente Disponibile"),
		L("Es ist genügend Kontext verfügbar, um die Benutzeranfrage ohne zusätzliche Suche zu beantworten.",
			"There is enough context available to answer the user's query without additional retrieval.",
			"Il y a suffisamment de contexte disponible pour répondre à la requête de l'utilisateur sans récupération supplémentaire.",
			"C'è abbastanza contesto disponibile per rispondere alla query dell'utente senza recupero aggiuntivo.")),
	"ContextInsufficientRejectEvent": tx(
		L("Unzureichender Kontext verfügbar", "Insufficient Context Available", "Contexte Insuffisant Disponible", "Contesto Insufficiente Disponibile"),
		L("Mehr Kontext ist erforderlich, um die Benutzeranfrage ordnungsgemäss zu beantworten.",
			"More context is needed to properly answer the user's query.",
			"Plus de contexte est nécessaire pour répondre correctement à la requête de l'utilisateur.",
			"È necessario più contesto per rispondere correttamente alla query dell'utente.")),
	"ExpertRejectEvent": tx(
		L("Experten-Eskalation abgelehnt", "Expert Escalation Declined", "Escalade Expert Refusée", "Escalation Esperto Rifiutata"),
		L("Der Benutzer hat die Weiterleitung seiner Frage an einen menschlichen Experten abgelehnt.",
			"The user declined to escalate their question to a human expert.",
			"L'utilisateur a refusé de transmettre sa question à un expert humain.",
			"L'utente ha rifiutato di inoltrare la sua domanda a un esperto umano.")),
	"SensitiveInfoAcceptEvent": tx(
		L("Antwort sicher zu teilen", "Response Safe to Share", "Réponse Sûre à Partager", "Risposta Sicura da Condividere"),
		L("Die Antwort enthält keine sensiblen Informationen und kann sicher geteilt werden.",
			"The response does not contain sensitive information and can be safely shared.",
			"La réponse ne contient pas d'informations sensibles et peut être partagée en toute sécurité.",
			"La risposta non contiene informazioni sensibili e può essere condivisa in sicurezza.")),
	"SensitiveInfoRejectEvent": tx(
		L("Sensible Informationen erkannt", "Sensitive Information Detected", "Informations Sensibles Détectées", "Informazioni Sensibili Rilevate"),
		L("Die Antwort enthielt sensible Informationen, die entfernt oder geschwärzt wurden.",
			"The response contained sensitive information that has been removed or redacted.",
			"La réponse contenait des informations sensibles qui ont été supprimées ou expurgées.",
			"La risposta conteneva informazioni sensibili che sono state rimosse o oscurate.")),
	"HumanInTheLoopRequestEvent": tx(
		L("Rückfrage an Benutzer", "User Query", "Demande à l'Utilisateur", "Richiesta all'Utente"),
		L("Der Agent benötigt zusätzliche Informationen vom Benutzer, um die Aufgabe fortsetzen zu können.",
			"The agent needs additional information from the user to continue with the task.",
			"L'agent a besoin d'informations supplémentaires de l'utilisateur pour poursuivre la tâche.",
			"L'agente ha bisogno di informazioni aggiuntive dall'utente per continuare con il compito.")),
	"HumanInTheLoopInputRequestEvent": tx(
		L("Texteingabe angefordert", "User Input Request", "Demande de Saisie", "Richiesta di Input"),
		L("Der Agent benötigt eine Texteingabe vom Benutzer, um die Aufgabe fortsetzen zu können.",
			"The agent needs text input from the user to continue with the task.",
			"L'agent a besoin d'une saisie texte de l'utilisateur pour poursuivre la tâche.",
			"L'agente ha bisogno di un input testuale dall'utente per continuare con il compito.")),
	"HumanInTheLoopConfirmationRequestEvent": tx(
		L("Bestätigung angefordert", "User Confirmation Request", "Demande de Confirmation", "Richiesta di Conferma"),
		L("Der Agent benötigt eine Ja/Nein-Bestätigung vom Benutzer, um die Aufgabe fortsetzen zu können.",
			"The agent needs a yes/no confirmation from the user to continue with the task.",
			"L'agent a besoin d'une confirmation oui/non de l'utilisateur pour poursuivre la tâche.",
			"L'agente ha bisogno di una conferma sì/no dall'utente per continuare con il compito.")),
	"HumanInTheLoopResponseEvent": tx(
		L("Benutzerantwort erhalten", "User Response Received", "Réponse de l'Utilisateur Reçue", "Risposta dell'Utente Ricevuta"),
		L("Der Benutzer hat die Rückfrage beantwortet, und der Agent kann mit der Aufgabe fortfahren.",
			"The user has answered the query, and the agent can proceed with the task.",
			"L'utilisateur a répondu à la demande, et l'agent peut poursuivre la tâche.",
			"L'utente ha risposto alla richiesta, e l'agente può procedere con il compito.")),
	"HumanInTheLoopInputResponseEvent": tx(
		L("Texteingabe erhalten", "User Input Received", "Saisie Reçue", "Input Ricevuto"),
		L("Der Benutzer hat eine Texteingabe gemacht, und der Agent kann mit der Aufgabe fortfahren.",
			"The user has provided text input, and the agent can proceed with the task.",
			"L'utilisateur a fourni une saisie texte, et l'agent peut poursuivre la tâche.",
			"L'utente ha fornito un input testuale, e l'agente può procedere con il compito.")),
	"HumanInTheLoopConfirmationResponseEvent": tx(
		L("Bestätigung erhalten", "User Confirmation Received", "Confirmation Reçue", "Conferma Ricevuta"),
		L("Der Benutzer hat bestätigt oder abgelehnt, und der Agent kann mit der Aufgabe fortfahren.",
			"The user has confirmed or declined, and the agent can proceed with the task.",
			"L'utilisateur a confirmé ou refusé, et l'agent peut poursuivre la tâche.",
			"L'utente ha confermato o rifiutato, e l'agente può procedere con il compito.")),
	"HumanInTheLoopChatRequestEvent": tx(
		L("Chat-Frage", "Chat Question", "Question Chat", "Domanda Chat"),
		L("Der Agent hat eine Frage gestellt, die durch eine Chat-Nachricht beantwortet werden kann.",
			"The agent has asked a question that can be answered by typing a chat message.",
			"L'agent a posé une question qui peut être répondue par un message de chat.",
			"L'agente ha posto una domanda che può essere risposta tramite un messaggio di chat.")),
	"HumanInTheLoopChatResponseEvent": tx(
		L("Chat-Antwort erhalten", "Chat Answer Received", "Réponse Chat Reçue", "Risposta Chat Ricevuta"),
		L("Der Benutzer hat per Chat-Nachricht geantwortet, und der Agent kann mit der Aufgabe fortfahren.",
			"The user has answered via chat message, and the agent can proceed with the task.",
			"L'utilisateur a répondu par message de chat, et l'agent peut poursuivre la tâche.",
			"L'utente ha risposto tramite messaggio di chat, e l'agente può procedere con il compito.")),
	"RouterEvent": tx(
		L("Optimaler Pfad gewählt", "Decided for optimal next path", "Chemin optimal choisi", "Percorso ottimale scelto"),
		L("Der Agent hat den optimalen Pfad für das weitere Vorgehen gewählt.",
			"The agent decided for the optimal path to go from here.",
			"L'agent a choisi le chemin optimal pour la suite.",
			"L'agente ha scelto il percorso ottimale per procedere da qui.")),
	"AgentEvent": tx(
		L("Agentenaktivität", "Agent Activity", "Activité de l'Agent", "Attività dell'Agente"),
		L("Ein spezialisierter Agent führt eine Aufgabe im Rahmen des Gesamtprozesses aus.",
			"A specialized agent is performing a task as part of the overall process.",
			"Un agent spécialisé effectue une tâche dans le cadre du processus global.",
			"Un agente specializzato sta eseguendo un compito come parte del processo complessivo.")),
	"ChainEvent": tx(
		L("Verkettete Aktionen", "Chained Actions", "Actions Enchaînées", "Azioni Concatenate"),
		L("Eine Reihe von zusammenhängenden Aktionen wird ausgeführt, um ein komplexes Problem zu lösen.",
			"A series of interconnected actions is being executed to solve a complex problem.",
			"Une série d'actions interconnectées est exécutée pour résoudre un problème complexe.",
			"Una serie di azioni interconnesse viene eseguita per risolvere un problema complesso.")),
	"EmbeddingEvent": tx(
		L("Informationssuche", "Information Search", "Recherche d'Informations", "Ricerca di Informazioni"),
		L("Der Agent durchsucht seinen Wissensspeicher nach relevanten Informationen zur Beantwortung der Anfrage.",
			"The agent is searching its knowledge base for relevant information to answer the request.",
			"L'agent recherche dans sa base de connaissances des informations pertinentes pour répondre à la demande.",
			"L'agente sta cercando nella sua base di conoscenza informazioni rilevanti per rispondere alla richiesta.")),
	"GuardEvent": tx(
		L("Sicherheitsprüfung", "Security Check", "Vérification de Sécurité", "Controllo di Sicurezza"),
		L("Die Anfrage wird auf Sicherheit und Einhaltung der Richtlinien überprüft.",
			"The request is being checked for security and compliance with policies.",
			"La demande est vérifiée pour la sécurité et la conformité aux politiques.",
			"La richiesta viene controllata per la sicurezza e la conformità alle politiche.")),
	"LLMEvent": tx(
		L("Sprachmodell-Interaktion", "Language Model Interaction", "Interaction avec le Modèle de Langage", "Interazione con il Modello di Linguaggio"),
		L("Eine Interaktion mit dem Sprachmodell wurde durchgeführt, um Informationen zu verarbeiten oder zu generieren.",
			"An interaction with the language model has been performed to process or generate information.",
			"Une interaction avec le modèle de langage a été effectuée pour traiter ou générer des informations.",
			"È stata eseguita un'interazione con il modello di linguaggio per elaborare o generare informazioni.")),
	"LLMStopEvent": tx(
		L("Sprachmodell-Interaktion beendet", "Language Model Interaction Completed", "Interaction avec le Modèle de Langage Terminée", "Interazione con il Modello di Linguaggio Completata"),
		L("Die Interaktion mit dem Sprachmodell wurde abgeschlossen.",
			"The interaction with the language model has been completed.",
			"L'interaction avec le modèle de langage a été terminée.",
			"L'interazione con il modello di linguaggio è stata completata.")),
	"RerankerEvent": tx(
		L("Relevanzoptimierung", "Relevance Optimization", "Optimisation de la Pertinence", "Ottimizzazione della Rilevanza"),
		L("Gefundene Dokumente werden nach Relevanz sortiert, um die passendsten Informationen für die Aufgabe auszuwählen.",
			"Found documents are being sorted by relevance to select the most appropriate information for the task.",
			"Les documents trouvés sont triés par pertinence pour sélectionner les informations les plus appropriées pour la tâche.",
			"I documenti trovati vengono ordinati per rilevanza per selezionare le informazioni più appropriate per il compito.")),
	"RetrieverEvent": tx(
		L("Dokumente gefunden", "Documents Found", "Documents Trouvés", "Documenti Trovati"),
		L("Der Agent hat relevante Dokumente gefunden, die bei der Bearbeitung der Aufgabe hilfreich sein könnten.",
			"The agent has found relevant documents that could be helpful in processing the task.",
			"L'agent a trouvé des documents pertinents qui pourraient être utiles dans le traitement de la tâche.",
			"L'agente ha trovato documenti rilevanti che potrebbero essere utili nell'elaborazione del compito.")),
	"ToolEvent": tx(
		L("Werkzeugeinsatz", "Tool Usage", "Utilisation d'Outil", "Utilizzo dello Strumento"),
		L("Der Agent verwendet ein spezialisiertes Werkzeug, um eine bestimmte Aufgabe effizienter zu erledigen.",
			"The agent is using a specialized tool to complete a specific task more efficiently.",
			"L'agent utilise un outil spécialisé pour accomplir une tâche spécifique plus efficacement.",
			"L'agente sta utilizzando uno strumento specializzato per completare un compito specifico in modo più efficiente.")),
	"ExceptionEvent": tx(
		L("Fehler aufgetreten", "Error Occurred", "Erreur Survenue", "Errore Verificato"),
		L("Während des Prozesses ist ein Ausnahmefehler aufgetreten, der den Arbeitsablauf unterbricht oder anpasst und Fehlerdetails bereitstellt.",
			"An exception or error has occurred during the process, halting or adjusting the workflow and providing error details.",
			"Une exception ou une erreur est survenue pendant le processus, arrêtant ou ajustant le flux de travail et fournissant des détails sur l'erreur.",
			"Si è verificata un'eccezione o un errore durante il processo, interrompendo o modificando il flusso di lavoro e fornendo dettagli sull'errore.")),
	"UserMessageEvent": tx(
		L("Benutzeranfrage", "User Request", "Demande de l'Utilisateur", "Richiesta dell'Utente"),
		L("Der Agent hat eine Nachricht vom Benutzer erhalten und verarbeitet diese unter Berücksichtigung des bisherigen Chatverlaufs.",
			"The agent has received a message from the user and is processing it, taking into account the previous chat history.",
			"L'agent a reçu un message de l'utilisateur et le traite, en tenant compte de l'historique de chat précédent.",
			"L'agente ha ricevuto un messaggio dall'utente e lo sta elaborando, tenendo conto della cronologia della chat precedente.")),
	"StandaloneQuestionCondenserEvent": tx(
		L("Kondensierte Einzelanfrage", "Question Condensed", "Demande Indépendante Condensée", "Condensatore di Domande Autonome"),
		L("Eine komplexe Anfrage wurde in eine klarere und prägnantere Einzelanfrage umgewandelt, um die Bearbeitung zu erleichtern.",
			"The user's request has been condensed to a standalone question for better retrieval.",
			"Une demande complexe a été transformée en une demande indépendante plus claire et concise pour faciliter le traitement.",
			"L'agente riformula una domanda autonoma per migliorarne la chiarezza e la pertinenza, facilitando una risposta più precisa.")),
	"BaseStoreMemoryEvent": tx(
		L("Erinnerungen Aktualisiert", "Memory Updated", "Mémoire Mise à Jour", "Memoria Aggiornata"),
		L("Agent hat Benutzer- oder Organisationsspeicher basierend auf der Konversation aktualisiert",
			"Agent updated user or organization memories based on conversation",
			"L'agent a mis à jour les mémoires de l'utilisateur ou de l'organisation basées sur la conversation",
			"L'agente ha aggiornato le memorie dell'utente o dell'organizzazione basate sulla conversazione")),
	"BaseRetrieveMemoryEvent": tx(
		L("Erinnerungen Abgerufen", "Memory Retrieved", "Mémoire Récupérée", "Memoria Recuperata"),
		L("Agent hat relevante Erinnerungen für den Kontext abgerufen",
			"Agent retrieved relevant memories for context",
			"L'agent a récupéré les mémoires pertinentes pour le contexte",
			"L'agente ha recuperato memorie rilevanti per il contesto")),
	"RetrieveUserMemoryEvent": tx(
		L("Benutzererinnerungen Abgerufen", "User Memory Retrieved", "Mémoire Utilisateur Récupérée", "Memoria Utente Recuperata"),
		L("Agent hat private Benutzererinnerungen für personalisierten Kontext abgerufen",
			"Agent retrieved private user memories for personalized context",
			"L'agent a récupéré les mémoires utilisateur privées pour un contexte personnalisé",
			"L'agente ha recuperato memorie utente private per un contesto personalizzato")),
	"RetrieveOrganizationMemoryEvent": tx(
		L("Organisationserinnerungen Abgerufen", "Organization Memory Retrieved", "Mémoire d'Organisation Récupérée", "Memoria Organizzativa Recuperata"),
		L("Agent hat gemeinsame Organisationserinnerungen für den Kontext abgerufen",
			"Agent retrieved shared organizational memories for context",
			"L'agent a récupéré les mémoires organisationnelles partagées pour le contexte",
			"L'agente ha recuperato memorie organizzative condivise per il contesto")),
	"StoreOrganizationMemoryEvent": tx(
		L("Organisationserinnerung Gespeichert", "Organization Memory Stored", "Mémoire d'Organisation Stockée", "Memoria Organizzativa Memorizzata"),
		L("Agent hat explizite Organisationsfakten gespeichert, die für alle Benutzer geteilt werden",
			"Agent stored explicit organizational fact shared across all users",
			"L'agent a stocké un fait organisationnel explicite partagé entre tous les utilisateurs",
			"L'agente ha memorizzato un fatto organizzativo esplicito condiviso tra tutti gli utenti")),
	"AddMemoryToChatHistoryEvent": tx(
		L("Erinnerungen zum Kontext Hinzugefügt", "Memory Added to Context", "Mémoire Ajoutée au Contexte", "Memoria Aggiunta al Contesto"),
		L("Agent hat Chat-Verlauf mit Erinnerungen erweitert",
			"Agent extended chat history with memories",
			"L'agent a étendu l'historique de chat avec les mémoires",
			"L'agente ha esteso la cronologia chat con le memorie")),
	"AddUserMemoryToChatHistoryEvent": tx(
		L("Benutzererinnerungen zum Kontext Hinzugefügt", "User Memory Added to Context", "Mémoire Utilisateur Ajoutée au Contexte", "Memoria Utente Aggiunta al Contesto"),
		L("Agent hat Chat-Verlauf mit privaten Benutzererinnerungen erweitert",
			"Agent extended chat history with private user memories",
			"L'agent a étendu l'historique de chat avec les mémoires utilisateur privées",
			"L'agente ha esteso la cronologia chat con le memorie utente private")),
	"AddOrganizationMemoryToChatHistoryEvent": tx(
		L("Organisationserinnerungen zum Kontext Hinzugefügt", "Organization Memory Added to Context", "Mémoire d'Organisation Ajoutée au Contexte", "Memoria Organizzativa Aggiunta al Contesto"),
		L("Agent hat Chat-Verlauf mit gemeinsamen Organisationserinnerungen erweitert",
			"Agent extended chat history with shared organizational memories",
			"L'agent a étendu l'historique de chat avec les mémoires organisationnelles partagées",
			"L'agente ha esteso la cronologia chat con le memorie organizzative condivise")),
	"RAGStartEvent": tx(
		L("Abruf Relevanter Kontexte", "Relevant Context Retrieval", "Récupération du Contexte Pertinent", "Recupero del Contesto Rilevante"),
		L("Die Retrieval-Augmented Generation wurde gestartet. Der Agent ruft relevanten Kontext aus den ausgewählten Wissensquellen ab – unter Verwendung der gewählten Namensräume und optionaler Metadatenfilter – bevor eine Antwort generiert wird.",
			"Retrieval-augmented generation has started. The agent is fetching relevant context from the selected knowledge sources — using the chosen namespaces and any additional metadata filters — before generating an answer.",
			"La génération augmentée par récupération (RAG) a démarré. L'agent récupère le contexte pertinent depuis les sources de connaissances sélectionnées — en utilisant les namespaces choisis et d'éventuels filtres de métadonnées — avant de générer une réponse.",
			"La generazione aumentata dal recupero (RAG) è iniziata. L'agente sta recuperando il contesto rilevante dalle fonti di conoscenza selezionate — utilizzando i namespace scelti e gli eventuali filtri di metadati — prima di generare una risposta.")),
	// ContextComposedEvent's texts appeared with the class. The French file
	// of that version is not at hand; python-i18n falls back to English for
	// a key a locale lacks, so English stands in for French.
	"ContextComposedEvent": tx(
		L("Angereicherter Kontext", "Enriched Context", "Enriched Context", "Contesto arricchito"),
		L("Der Chat-Verlauf, den das Modell erhält, mit allen abgerufenen Kontextblöcken",
			"The chat history the model receives, with every retrieved context block merged in",
			"The chat history the model receives, with every retrieved context block merged in",
			"La cronologia della chat che il modello riceve, con tutti i blocchi di contesto recuperati")),
	// ComposeContextEvent names its own keys, which no events file of the
	// reference defines: python-i18n then returns the key itself.
	"ComposeContextEvent": tx(
		L(composeName, composeName, composeName, composeName),
		L(composeDesc, composeDesc, composeDesc, composeDesc)),
	// The reference's texts for this class are not at hand: this SDK's own.
	"KnowledgeSearchedEvent": tx(
		L("Wissen Durchsucht", "Knowledge Searched", "Connaissances Recherchées", "Conoscenza Cercata"),
		L("Die Wissenssammlungen, auf die der Benutzer zugreifen darf, wurden nach der Anfrage durchsucht.",
			"The knowledge collections the user may read have been searched for the request.",
			"Les collections de connaissances que l'utilisateur peut lire ont été parcourues pour la demande.",
			"Le raccolte di conoscenza che l'utente può leggere sono state cercate per la richiesta.")),
	// Not in the reference's events files: this SDK's own texts for the
	// process tree, so that work events never show empty titles.
	"WorkEvent": tx(
		L("Arbeitsschritt", "Work Step", "Étape de Travail", "Fase di Lavoro"),
		L("Ein Arbeitsschritt des Prozesses wurde abgeschlossen.",
			"A work step of the process has been completed.",
			"Une étape de travail du processus a été terminée.",
			"Una fase di lavoro del processo è stata completata.")),
	"CronStartEvent":      scheduledTexts,
	"ScheduledStartEvent": scheduledTexts,
	"RAGSuccessStopEvent": tx(
		L("RAG Erfolg", "RAG Success", "Succès RAG", "Successo RAG"),
		L("Der Retrieval-Augmented-Lauf hat eine Antwort für den Benutzer erzeugt.",
			"The retrieval-augmented run produced an answer for the user.",
			"L'exécution augmentée par récupération a produit une réponse pour l'utilisateur.",
			"L'esecuzione aumentata dal recupero ha prodotto una risposta per l'utente.")),
	"RAGFailureStopEvent": tx(
		L("RAG Fehlschlag", "RAG Failure", "Échec RAG", "Fallimento RAG"),
		L("Der Retrieval-Augmented-Lauf konnte keine nützliche Antwort liefern. Das Reason-Feld erklärt, welcher Pfad zum Fehlschlag geführt hat.",
			"The retrieval-augmented run failed to produce a useful answer. The reason field explains which path led to the failure.",
			"L'exécution augmentée par récupération n'a pas pu produire de réponse utile. Le champ reason explique quel chemin a conduit à l'échec.",
			"L'esecuzione aumentata dal recupero non è riuscita a produrre una risposta utile. Il campo reason spiega quale percorso ha portato al fallimento.")),
}

var scheduledTexts = tx(
	L("Geplanter Lauf Gestartet", "Scheduled Run Started", "Exécution Planifiée Démarrée", "Esecuzione Pianificata Avviata"),
	L("Ein geplanter Lauf wurde vom Cron-Scheduler automatisch zur konfigurierten Zeit gestartet. Kein Benutzer hat ihn ausgelöst — der Lauf wird als Systemlauf ohne Ausführungsidentität ausgeführt.",
		"A scheduled run was started automatically by the cron scheduler at its configured time. No user initiated it — the run executes as a system run without an execution identity.",
		"Une exécution planifiée a été démarrée automatiquement par le planificateur cron à l'heure configurée. Aucun utilisateur ne l'a initiée — l'exécution se déroule comme une exécution système sans identité d'exécution.",
		"Un'esecuzione pianificata è stata avviata automaticamente dallo scheduler cron all'orario configurato. Nessun utente l'ha avviata — l'esecuzione avviene come esecuzione di sistema senza identità di esecuzione."))

const (
	composeName = "lib.events.compose_context_event.name"
	composeDesc = "lib.events.compose_context_event.description"
)
